package dev.holdfast.autoconfigure;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.context.LifecycleAutoConfiguration;
import org.springframework.boot.availability.ApplicationAvailabilityBean;
import org.springframework.boot.availability.AvailabilityChangeEvent;
import org.springframework.boot.availability.LivenessState;
import org.springframework.boot.availability.ReadinessState;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroups;
import org.springframework.boot.health.autoconfigure.actuate.endpoint.AvailabilityProbesAutoConfiguration;
import org.springframework.boot.health.autoconfigure.actuate.endpoint.HealthEndpointAutoConfiguration;
import org.springframework.boot.health.autoconfigure.application.AvailabilityHealthContributorAutoConfiguration;
import org.springframework.boot.health.autoconfigure.contributor.HealthContributorAutoConfiguration;
import org.springframework.boot.health.autoconfigure.registry.HealthContributorRegistryAutoConfiguration;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.LeaderElections;
import dev.holdfast.LeaderOnly;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.NotLeaderException;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.actuate.TickClockMetrics;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.scheduling.SingleInstanceScheduledBeanPostProcessor;
import dev.holdfast.scheduling.TickClock;
import dev.holdfast.test.server.RedisServer;
import dev.holdfast.test.server.ZooKeeperServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * A named backend's failure, clock and shutdown are its own (NBK-8, NBK-10, NBK-11 in
 * docs/DESIGN.md): the default backend on a real Redis, a named {@code zk} on a real ZooKeeper
 * server of each test's own, and a named {@code cache} on the same Redis; for the clock, two
 * in-memory backends, one whose clock is two minutes ahead.
 */
class NamedBackendFailureTests {

	private static RedisServer redis;

	private final ZooKeeperServer zooKeeper = ZooKeeperServer.start();

	private final String name = "job-" + UUID.randomUUID();

	@BeforeAll
	static void startRedis() {
		redis = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		redis.close();
	}

	@AfterEach
	void stopZooKeeper() {
		this.zooKeeper.close();
	}

	private ApplicationContextRunner runner() {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, DataRedisAutoConfiguration.class,
					HoldfastAutoConfiguration.class, HoldfastLeaderAutoConfiguration.class,
					HoldfastActuatorAutoConfiguration.class, HealthContributorAutoConfiguration.class,
					HealthContributorRegistryAutoConfiguration.class, HealthEndpointAutoConfiguration.class,
					AvailabilityHealthContributorAutoConfiguration.class, AvailabilityProbesAutoConfiguration.class))
			.withBean(ApplicationAvailabilityBean.class)
			.withPropertyValues("spring.data.redis.port=" + redis.port(), "holdfast.backend=redis",
					"holdfast.backends.cache.type=redis", "holdfast.backends.zk.type=zookeeper",
					"holdfast.backends.zk.zookeeper.connect-string=" + this.zooKeeper.connectString(),
					"holdfast.backends.zk.zookeeper.session-timeout=4s",
					"holdfast.backends.zk.zookeeper.connection-timeout=1s",
					"management.endpoint.health.probes.enabled=true");
	}

	@Test
	void aLeaderGroupOnANamedBackendLosesItsLeadershipWhenThatBackendFailsAndTheDefaultsGroupKeepsIt() {
		runner().withUserConfiguration(RelayConfiguration.class).run((context) -> {
			assertThat(context).hasNotFailed();
			context.publishEvent(new ApplicationReadyEvent(new SpringApplication(), new String[0],
					context.getSourceApplicationContext(), Duration.ZERO));
			Relay relay = context.getBean(Relay.class);
			await().atMost(Duration.ofSeconds(20))
				.until(() -> relay.main().join("relay").isLeader() && relay.zk().join("relay").isLeader());
			assertThat(relay.pollOnZooKeeper()).isEqualTo("zk");

			this.zooKeeper.close();
			await().atMost(Duration.ofSeconds(20)).until(() -> !relay.zk().join("relay").isLeader());
			assertThatExceptionOfType(NotLeaderException.class).isThrownBy(relay::pollOnZooKeeper);
			assertThat(relay.main().join("relay").isLeader()).as("the default backend's group of the same name").isTrue();
			assertThat(relay.poll()).isEqualTo("default");
		});
	}

	@Test
	void theOverallHealthIsDownWhileANamedBackendIsAndTheProbesLeaveItOut() {
		runner().run((context) -> {
			assertThat(context).hasNotFailed();
			AvailabilityChangeEvent.publish(context, LivenessState.CORRECT);
			AvailabilityChangeEvent.publish(context, ReadinessState.ACCEPTING_TRAFFIC);
			HealthEndpoint health = context.getBean(HealthEndpoint.class);
			assertThat(health.health().getStatus()).isEqualTo(Status.UP);
			this.zooKeeper.close();
			await().atMost(Duration.ofSeconds(20)).until(() -> health.health().getStatus().equals(Status.DOWN));
			assertThat(health.healthForPath("holdfastBackends", "zk").getStatus()).isEqualTo(Status.DOWN);
			assertThat(health.healthForPath("holdfastBackends", "cache").getStatus()).isEqualTo(Status.UP);
			assertThat(health.healthForPath("holdfast").getStatus()).isEqualTo(Status.UP);
			HealthEndpointGroups groups = context.getBean(HealthEndpointGroups.class);
			assertThat(groups.getPrimary().isMember("holdfastBackends")).isTrue();
			assertThat(groups.get("liveness").isMember("holdfastBackends")).isFalse();
			assertThat(groups.get("readiness").isMember("holdfastBackends")).isFalse();
		});
	}

	@Test
	void aNamedBackendsRunningLockedMethodFinishesBeforeItsLockIsReleasedAtShutdown() {
		runner().withPropertyValues("spring.lifecycle.timeout-per-shutdown-phase=10s").run((context) -> {
			assertThat(context).hasNotFailed();
			DefaultLockTemplate cache = context.getBean("holdfastLockTemplate.cache", DefaultLockTemplate.class);
			CountDownLatch running = new CountDownLatch(1);
			CountDownLatch finish = new CountDownLatch(1);
			FutureTask<String> method = new FutureTask<>(() -> cache.executeLocked(this.name, null,
					LockOptions.defaults(), () -> {
						running.countDown();
						assertThat(finish.await(10, TimeUnit.SECONDS)).isTrue();
						return "done";
					}));
			new Thread(method, "locked-method").start();
			assertThat(running.await(5, TimeUnit.SECONDS)).isTrue();
			assertThat(keysOfThisTest()).as("held on Redis").isNotEmpty();
			CompletableFuture<Void> closing = CompletableFuture.runAsync(context::close);
			await().atMost(Duration.ofSeconds(5))
				.untilAsserted(() -> assertThatExceptionOfType(LockBackendException.class)
					.isThrownBy(() -> cache.tryAcquire("other-" + this.name, null, LockOptions.defaults()))
					.withMessageContaining("shutting down"));
			assertThat(closing).isNotDone();
			assertThat(cache.heldLeases()).hasSize(1);
			assertThat(keysOfThisTest()).as("still held while the method runs").isNotEmpty();
			finish.countDown();
			assertThat(method.get(5, TimeUnit.SECONDS)).isEqualTo("done");
			closing.get(10, TimeUnit.SECONDS);
			assertThat(keysOfThisTest()).as("released, not left to expire").isEmpty();
		});
	}

	@Test
	void aNamedBackendsRunningJobIsWaitedForAtShutdownAndItsLockReleased() {
		runner().withUserConfiguration(SlowJobConfiguration.class)
			.withPropertyValues("spring.lifecycle.timeout-per-shutdown-phase=10s")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				SlowJob job = context.getBean(SlowJob.class);
				DefaultLockTemplate cache = context.getBean("holdfastLockTemplate.cache", DefaultLockTemplate.class);
				assertThat(job.running.await(20, TimeUnit.SECONDS)).isTrue();
				assertThat(cache.heldLeases()).singleElement()
					.satisfies((lease) -> assertThat(lease.key()).isEqualTo("holdfast:cache::" + SlowJob.NAME));
				CompletableFuture<Void> closing = CompletableFuture.runAsync(context::close);
				await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(2)).until(() -> !closing.isDone());
				assertThat(cache.heldLeases()).as("the job's lock, held while it runs").hasSize(1);
				job.finish.countDown();
				closing.get(10, TimeUnit.SECONDS);
				assertThat(job.finished).isTrue();
				assertThat(cache.heldLeases()).isEmpty();
				assertThat((List<?>) redis.command("KEYS", "{holdfast:cache::" + SlowJob.NAME + "}"))
					.as("released, not left to expire")
					.isEmpty();
			});
	}

	/** The Redis keys of this test's lock, but its fencing counter, which outlives it. */
	private List<?> keysOfThisTest() {
		return ((List<?>) redis.command("KEYS", "*" + this.name + "*")).stream()
			.filter((key) -> !key.toString().endsWith(":fence"))
			.toList();
	}

	@Test
	void aBackendWhoseClockIsOffRefusesItsJobsTicksWhileTheDefaultsJobsRun() {
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class,
					HoldfastActuatorAutoConfiguration.class, MetricsAutoConfiguration.class))
			.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
			.withUserConfiguration(SkewedJobsConfiguration.class)
			.withPropertyValues("holdfast.backend=memory", "holdfast.backends.skewed.bean=skewedLocks")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				SkewedJobs jobs = context.getBean(SkewedJobs.class);
				TickClock skewed = context.getBean(SingleInstanceScheduledBeanPostProcessor.class).tickClock("skewed");
				await().atMost(Duration.ofSeconds(20))
					.until(() -> jobs.onDefault.get() >= 3 && skewed.refusedJobs().containsKey("on-skewed"));
				assertThat(jobs.onSkewed.get()).as("ticks run on the backend whose clock is off").isZero();
				MeterRegistry meters = context.getBean(MeterRegistry.class);
				assertThat(meters.get(TickClockMetrics.OFFSET).tag("backend", "skewed").gauge().value())
					.as("this instance's clock less the skewed backend's, auto-configured gauge")
					.isLessThan(-50);
				assertThat(meters.get(TickClockMetrics.OFFSET).tag("backend", "memory").gauge().value())
					.isBetween(-1.0, 1.0);
			});
	}

	@Configuration(proxyBeanMethods = false)
	static class SkewedJobsConfiguration {

		@Bean(defaultCandidate = false)
		InMemoryLockBackend skewedLocks() {
			return new InMemoryLockBackend(Clock.offset(Clock.systemUTC(), Duration.ofMinutes(2)));
		}

		@Bean
		SkewedJobs skewedJobs() {
			return new SkewedJobs();
		}

	}

	static class SkewedJobs {

		final AtomicInteger onDefault = new AtomicInteger();

		final AtomicInteger onSkewed = new AtomicInteger();

		@SingleInstanceScheduled(name = "on-default", cron = "* * * * * *")
		void runOnDefault() {
			this.onDefault.incrementAndGet();
		}

		@SingleInstanceScheduled(name = "on-skewed", cron = "* * * * * *", backend = "skewed")
		void runOnSkewed() {
			this.onSkewed.incrementAndGet();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class SlowJobConfiguration {

		@Bean
		SlowJob slowJob() {
			return new SlowJob();
		}

	}

	static class SlowJob {

		static final String NAME = "named-backend-slow-job";

		final CountDownLatch running = new CountDownLatch(1);

		final CountDownLatch finish = new CountDownLatch(1);

		volatile boolean finished;

		@SingleInstanceScheduled(name = NAME, fixedRate = "2s", backend = "cache")
		public void run() throws InterruptedException {
			this.running.countDown();
			this.finished = this.finish.await(10, TimeUnit.SECONDS);
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class RelayConfiguration {

		@Bean
		Relay relay(LeaderElections main, @Qualifier("zk") LeaderElections zk) {
			return new Relay(main, zk);
		}

	}

	static class Relay {

		private final LeaderElections main;

		private final LeaderElections zk;

		Relay(LeaderElections main, LeaderElections zk) {
			this.main = main;
			this.zk = zk;
		}

		public LeaderElections main() {
			return this.main;
		}

		public LeaderElections zk() {
			return this.zk;
		}

		@LeaderOnly(group = "relay", onNotLeader = LeaderOnly.OnNotLeader.THROW)
		public String poll() {
			return "default";
		}

		@LeaderOnly(group = "relay", backend = "zk", onNotLeader = LeaderOnly.OnNotLeader.THROW)
		public String pollOnZooKeeper() {
			return "zk";
		}

	}

}
