package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;

import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.ClientResourcesBuilderCustomizer;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Redis goes away for {@link #OUTAGE} (killed, then started again on the same port) under an
 * application configured by Spring Boot alone: no Lettuce tuning, a 2 s command timeout. Measures
 * how long after Redis is back the first acquisition succeeds, and the health check is UP again.
 * Lettuce's default reconnect back-off doubles up to 30 s, so after a 9 s outage its next attempt
 * came up to ~7 s after Redis was back; Holdfast caps it.
 */
class RedisOutageRecoveryTests {

	/** Long enough for Lettuce's default back-off to reach 8 s. */
	private static final Duration OUTAGE = Duration.ofSeconds(9);

	private static final LockOptions ONE_ATTEMPT = LockOptions.defaults().waitTime(Duration.ZERO);

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, HoldfastAutoConfiguration.class));

	private RedisServer server;

	@BeforeEach
	void startRedis() {
		this.server = RedisServer.start();
	}

	@AfterEach
	void stopRedis() {
		this.server.close();
	}

	@Test
	void firstAcquisitionSucceedsWithinTwoSecondsOfRedisComingBack() {
		this.runner.withPropertyValues("spring.data.redis.port=" + this.server.port(), "spring.data.redis.timeout=2s")
			.run((context) -> {
				LockTemplate template = context.getBean(LockTemplate.class);
				RedisLockBackend backend = context.getBean(RedisLockBackend.class);
				String name = "outage-" + UUID.randomUUID();
				template.acquire(name, null, ONE_ATTEMPT).close();
				this.server.kill();
				long downUntil = System.nanoTime() + OUTAGE.toNanos();
				long longestFailure = 0;
				while (System.nanoTime() < downUntil) {
					long start = System.nanoTime();
					try {
						template.acquire(name, null, ONE_ATTEMPT).close();
					}
					catch (LockBackendException expected) {
						longestFailure = Math.max(longestFailure, System.nanoTime() - start);
					}
				}
				this.server.restart();
				long back = System.nanoTime();
				CompletableFuture<Long> healthy = CompletableFuture
					.supplyAsync(() -> sinceBack(back, () -> backend.checkHealth().up()));
				Long acquired = sinceBack(back, () -> {
					template.acquire(name, null, ONE_ATTEMPT).close();
					return true;
				});
				Long healthUp = healthy.join();
				System.out.printf(Locale.ROOT,
						"Redis outage of %d s: longest failed call during it %d ms; back -> first acquisition %s ms,"
								+ " back -> health UP %s ms%n",
						OUTAGE.toSeconds(), longestFailure / 1_000_000, millis(acquired), millis(healthUp));
				assertThat(acquired).as("Redis back -> first successful acquisition (ns)").isNotNull();
				assertThat(Duration.ofNanos(acquired)).isLessThan(Duration.ofSeconds(2));
				assertThat(healthUp).as("Redis back -> health UP (ns)").isNotNull();
				assertThat(Duration.ofNanos(healthUp)).isLessThan(Duration.ofSeconds(2));
			});
	}

	@Test
	void lettuceReconnectDelayIsCappedUnlessTheApplicationSetsItsOwn() {
		ApplicationContextRunner redis = this.runner.withPropertyValues("spring.data.redis.port=" + this.server.port());
		redis.run((context) -> assertThat(context.getBean(ClientResources.class).reconnectDelay().createDelay(20))
			.isLessThanOrEqualTo(Duration.ofMillis(500)));
		redis
			.withBean("appReconnectDelay", ClientResourcesBuilderCustomizer.class,
					() -> (builder) -> builder.reconnectDelay(Delay.constant(Duration.ofSeconds(3))))
			.run((context) -> assertThat(context.getBean(ClientResources.class).reconnectDelay().createDelay(20))
				.isEqualTo(Duration.ofSeconds(3)));
	}

	/** Nanoseconds from {@code back} until {@code call} first returns true, or null after 40 s. */
	private static Long sinceBack(long back, BooleanSupplier call) {
		while (System.nanoTime() - back < Duration.ofSeconds(40).toNanos()) {
			try {
				if (call.getAsBoolean()) {
					return System.nanoTime() - back;
				}
			}
			catch (LockBackendException stillDown) {
				// Lettuce has not reconnected yet.
			}
		}
		return null;
	}

	private static String millis(Long nanos) {
		return (nanos != null) ? Long.toString(nanos / 1_000_000) : "never (40 s)";
	}

}
