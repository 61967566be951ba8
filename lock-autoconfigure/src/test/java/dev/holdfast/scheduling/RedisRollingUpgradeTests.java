package dev.holdfast.scheduling;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.ArrayList;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import org.springframework.boot.Banner;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.data.redis.core.script.RedisScript;

import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A rolling upgrade on Redis: instances of this version and instances that claim ticks as the
 * previous version did (its tick-claim script, verbatim, on the same record: no clock check, a
 * record that lives one period after the next tick by the claimer's clock) run one cron job side
 * by side, with skewed clocks on both sides. No tick runs twice.
 */
class RedisRollingUpgradeTests {

	/** The previous version's claim: the record only moves forward; no clock is consulted. */
	static final RedisScript<Long> PREVIOUS_CLAIM = RedisScript.of("""
			local last = tonumber(redis.call('GET', KEYS[1]) or '-1')
			if last ~= nil and last >= tonumber(ARGV[1]) then
				return 0
			end
			redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
			return 1
			""", Long.class);

	private static RedisServer redis;

	private final List<ConfigurableApplicationContext> instances = new ArrayList<>();

	private final TickRecorder recorder = new TickRecorder();

	private final String jobName = "upgrade-" + UUID.randomUUID();

	@BeforeAll
	static void startRedis() {
		redis = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		redis.close();
	}

	@AfterEach
	void closeInstances() {
		this.instances.forEach(ConfigurableApplicationContext::close);
	}

	@Test
	void previousAndCurrentInstancesSideBySideNeverRunATickTwice(TestInfo test) {
		Map<String, Duration> clocks = new LinkedHashMap<>();
		clocks.put("new-exact", Duration.ZERO);
		clocks.put("new-ahead-2.5s", Duration.ofMillis(2500));
		clocks.put("previous-exact", Duration.ZERO);
		clocks.put("previous-behind-2.5s", Duration.ofMillis(-2500));
		clocks.put("previous-behind-0.7s", Duration.ofMillis(-700));
		clocks.forEach((instance, skew) -> start(instance, skew, instance.startsWith("previous")));
		Instant from = Instant.now().plusSeconds(1).truncatedTo(java.time.temporal.ChronoUnit.SECONDS);
		TickRecorder.Window window = new TickRecorder.Window(from, from.plusSeconds(6));
		await().atMost(Duration.ofSeconds(30))
			.pollInterval(Duration.ofMillis(100))
			.until(() -> Instant.now().isAfter(window.to().plusSeconds(3)));
		TickFigures.Row row = TickFigures.row("redis, rolling upgrade",
				"cron every 1 s; this version: clocks 0, +2.5 s; previous version: 0, −2.5 s, −0.7 s", this.recorder,
				window, clocks);
		TickFigures.write(getClass(), test, row);
		assertThat(row.duplicates()).as("%s", row).isZero();
		assertThat(this.recorder.runsOf("new-ahead-2.5s")).as("runs of the new instance 2.5 s ahead").isZero();
		assertThat(row.ticksRun()).as("%s", row).isGreaterThanOrEqualTo(5);
	}

	private void start(String instance, Duration skew, boolean previous) {
		Clock clock = Clock.offset(Clock.systemUTC(), skew);
		SpringApplicationBuilder builder = new SpringApplicationBuilder(AbstractSingleInstanceClusterTests.CronJob.class,
				AutoConfig.class)
			.web(WebApplicationType.NONE)
			.logStartupInfo(false)
			.bannerMode(Banner.Mode.OFF)
			.properties("job.name=" + this.jobName, "instance=" + instance, "spring.data.redis.port=" + redis.port(),
					"holdfast.backend=redis")
			.initializers((context) -> {
				context.getBeanFactory().registerSingleton("clock", clock);
				context.getBeanFactory().registerSingleton("recorder", this.recorder);
				context.getBeanFactory().registerSingleton("skips", this.recorder.listener(instance, this.jobName));
			});
		if (previous) {
			builder.sources(PreviousVersion.class);
		}
		this.instances.add(builder.run());
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataRedisAutoConfiguration.class, HoldfastAutoConfiguration.class })
	static class AutoConfig {

	}

	@Configuration(proxyBeanMethods = false)
	static class PreviousVersion {

		@Bean
		LockBackend previousVersionBackend(RedisConnectionFactory factory, Clock clock) {
			return new PreviousVersionBackend(factory, clock);
		}

	}

	/**
	 * The redis backend with the previous version's tick claims: the record of the job, claimed
	 * with the previous script, living until one period after the next tick by this instance's
	 * clock; a run half a period after the next tick or later was skipped. It reports the
	 * instance's own clock as the backend's: the previous version measured no offset.
	 */
	static final class PreviousVersionBackend implements LockBackend, LeaseRenewal, TickClaims {

		private final RedisLockBackend locks;

		private final StringRedisTemplate redis;

		private final Clock clock;

		PreviousVersionBackend(RedisConnectionFactory factory, Clock clock) {
			this.locks = new RedisLockBackend(factory);
			this.redis = new StringRedisTemplate(factory);
			this.clock = clock;
		}

		@Override
		public String name() {
			return "redis";
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			return this.locks.tryAcquire(key, owner, ttl);
		}

		@Override
		public boolean release(String key, String owner) {
			return this.locks.release(key, owner);
		}

		@Override
		public Set<String> renew(Collection<HeldLock> locks) {
			return this.locks.renew(locks);
		}

		@Override
		public TickClaim claimTick(String key, Instant tick, Duration tolerance, Duration ttl) {
			Instant now = this.clock.instant();
			// cron every second: the record lived until one period after the next tick
			Duration life = Duration.between(now, tick.plusSeconds(2));
			if (life.compareTo(Duration.ofMillis(500)) <= 0) {
				return new TickClaim(TickClaim.Outcome.TAKEN, now);
			}
			Long claimed = this.redis.execute(PREVIOUS_CLAIM, List.of("{" + key + "}:tick"),
					Long.toString(tick.toEpochMilli()), Long.toString(life.toMillis()));
			return new TickClaim((claimed != null && claimed == 1) ? TickClaim.Outcome.CLAIMED
					: TickClaim.Outcome.TAKEN, now);
		}

	}

}
