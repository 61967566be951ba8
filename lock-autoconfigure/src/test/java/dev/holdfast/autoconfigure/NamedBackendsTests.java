package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.health.contributor.CompositeHealthContributor;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;

import dev.holdfast.DistributedLock;
import dev.holdfast.DistributedSemaphore;
import dev.holdfast.LeaderElections;
import dev.holdfast.LeaderOnly;
import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockContext;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.actuate.JobsView.JobsDescriptor;
import dev.holdfast.actuate.LeadersEndpoint;
import dev.holdfast.actuate.LeadersEndpoint.LeadersDescriptor;
import dev.holdfast.actuate.LocksEndpoint;
import dev.holdfast.actuate.LocksEndpoint.LeaseDescriptor;
import dev.holdfast.actuate.LocksEndpoint.LocksDescriptor;
import dev.holdfast.actuate.TickClockMetrics;
import dev.holdfast.core.LockEngine;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.scheduling.SingleInstanceScheduledBeanPostProcessor;
import dev.holdfast.test.server.PostgresServer;
import dev.holdfast.test.server.RedisServer;
import dev.holdfast.test.server.ZooKeeperServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Several backends in one context (NBK in docs/DESIGN.md): the default one on a real Redis, a
 * named {@code jobs} on a real PostgreSQL and a named {@code zk} on a real ZooKeeper.
 */
@ExtendWith(OutputCaptureExtension.class)
class NamedBackendsTests {

	private static RedisServer redis;

	private static PostgresServer postgres;

	private static ZooKeeperServer zooKeeper;

	@BeforeAll
	static void startServers() {
		redis = RedisServer.start();
		postgres = PostgresServer.shared();
		zooKeeper = ZooKeeperServer.start();
	}

	@AfterAll
	static void stopServers() {
		redis.close();
		zooKeeper.close();
	}

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, DataSourceAutoConfiguration.class,
				HoldfastAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class, EndpointAutoConfiguration.class))
		.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
		.withPropertyValues("spring.data.redis.port=" + redis.port(), "spring.datasource.url=" + postgres.jdbcUrl(),
				"spring.datasource.username=postgres", "spring.datasource.password=postgres", "holdfast.backend=redis",
				"holdfast.backends.jobs.type=jdbc", "holdfast.backends.jobs.jdbc.initialize-schema=always",
				"management.endpoints.web.exposure.include=locks,leaders", "holdfast.backends.zk.type=zookeeper",
				"holdfast.backends.zk.zookeeper.connect-string=" + zooKeeper.connectString());

	@Test
	void aMethodLockedOnEachBackendHoldsItsLockThereAndTheMetersAreTaggedWithTheBackendsName() {
		this.runner.withUserConfiguration(LockedConfiguration.class).run((context) -> {
			assertThat(context).hasNotFailed();
			Locked locked = context.getBean(Locked.class);
			LockEngine jobs = context.getBean("holdfastLockTemplate.jobs", LockEngine.class);
			LockEngine zk = context.getBean("holdfastLockTemplate.zk", LockEngine.class);
			LockEngine main = context.getBean(LockEngine.class);
			assertThat(locked.onDefault(main, jobs, zk)).isEqualTo("holdfast:report");
			assertThat(locked.onJobs(main, jobs, zk)).isEqualTo("holdfast:jobs::report");
			assertThat(locked.onZooKeeper(main, jobs, zk)).isEqualTo("holdfast:zk::report");
			assertThat(locked.permitOnJobs(main, jobs, zk)).startsWith("holdfast:jobs::exports");
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			for (String backend : List.of("redis", "jobs", "zk")) {
				assertThat(meters.find("holdfast.lock.acquire")
					.tags("backend", backend, "name", "report", "mode", "exclusive")
					.timer())
					.as(backend)
					.isNotNull();
			}
			assertThat(health(context, "holdfast")).isEqualTo(Status.UP);
			assertThat(health(context, "jobs")).isEqualTo(Status.UP);
			assertThat(health(context, "zk")).isEqualTo(Status.UP);
		});
	}

	@Test
	void aNamedTemplateIsInjectedByItsQualifierAndTheSameNameOnTwoBackendsIsTwoLocks() {
		this.runner.withUserConfiguration(QualifiedConfiguration.class).run((context) -> {
			assertThat(context).hasNotFailed();
			Qualified qualified = context.getBean(Qualified.class);
			assertThat(qualified.jobs).isSameAs(context.getBean("holdfastLockTemplate.jobs"));
			assertThat(qualified.main).isSameAs(context.getBean("holdfastLockTemplate"));
			try (Lease onJobs = qualified.jobs.acquire("same", null, LockOptions.defaults());
					Lease onZk = qualified.zk.acquire("same", null, LockOptions.defaults());
					Lease onDefault = qualified.main.acquire("same", null, LockOptions.defaults())) {
				assertThat(List.of(onJobs, onZk, onDefault)).allMatch(Lease::isValid);
				LocksDescriptor locks = context.getBean(LocksEndpoint.class).locks(SecurityContext.NONE);
				assertThat(locks.leases()).extracting(LeaseDescriptor::key).containsExactly("holdfast:same");
				assertThat(locks.backends().get("jobs").leases()).extracting(LeaseDescriptor::key)
					.containsExactly("holdfast:jobs::same");
				assertThat(locks.backends().get("zk").type()).isEqualTo("zookeeper");
				assertThat(locks.backends().get("zk").leases()).extracting(LeaseDescriptor::key)
					.containsExactly("holdfast:zk::same");
			}
		});
	}

	@Test
	void twoBackendsOnOneDataSourceAreSaidAtInfoAndKeepTwoLocksOfOneName(CapturedOutput output) {
		this.runner.withPropertyValues("holdfast.backends.reports.type=jdbc").run((context) -> {
			assertThat(context).hasNotFailed();
			LockTemplate jobs = context.getBean("holdfastLockTemplate.jobs", LockTemplate.class);
			LockTemplate reports = context.getBean("holdfastLockTemplate.reports", LockTemplate.class);
			try (Lease one = jobs.acquire("same", null, LockOptions.defaults())) {
				Optional<Lease> other = reports.tryAcquire("same", null, LockOptions.defaults().waitTime(Duration.ZERO));
				assertThat(other).isPresent();
				other.get().close();
			}
			assertThat(output).contains("Holdfast backends [jobs, reports] share the jdbc client 'dataSource'");
		});
	}

	@Test
	void whileOneBackendIsStoppedTheOthersKeepWorking() {
		RedisServer ownRedis = RedisServer.start();
		try {
			this.runner.withUserConfiguration(LockedConfiguration.class)
				.withPropertyValues("spring.data.redis.port=" + ownRedis.port(), "spring.data.redis.timeout=500ms")
				.run((context) -> {
					assertThat(context).hasNotFailed();
					Locked locked = context.getBean(Locked.class);
					LockEngine jobs = context.getBean("holdfastLockTemplate.jobs", LockEngine.class);
					LockEngine zk = context.getBean("holdfastLockTemplate.zk", LockEngine.class);
					LockEngine main = context.getBean(LockEngine.class);
					ownRedis.kill();
					assertThatExceptionOfType(LockBackendException.class)
						.isThrownBy(() -> locked.onDefault(main, jobs, zk));
					assertThat(locked.onJobs(main, jobs, zk)).isEqualTo("holdfast:jobs::report");
					assertThat(locked.onZooKeeper(main, jobs, zk)).isEqualTo("holdfast:zk::report");
					assertThat(health(context, "holdfast")).isEqualTo(Status.DOWN);
					assertThat(health(context, "jobs")).isEqualTo(Status.UP);
					assertThat(health(context, "zk")).isEqualTo(Status.UP);
				});
		}
		finally {
			ownRedis.close();
		}
	}

	@Test
	void aJobOnTheJdbcBackendHoldsItsLockAndClaimsItsTicksThere() {
		this.runner.withUserConfiguration(JobConfiguration.class).run((context) -> {
			assertThat(context).hasNotFailed();
			Job job = context.getBean(Job.class);
			String run = job.runs.poll(20, TimeUnit.SECONDS);
			assertThat(run).isEqualTo("holdfast:jobs::named-backends-job held on jobs only");
			List<String> keys = new JdbcTemplate(context.getBean(DataSource.class))
				.queryForList("select lock_key from holdfast_lock", String.class);
			assertThat(keys).anyMatch((key) -> key.startsWith("holdfast:jobs::") && !key.equals("holdfast:jobs::named-backends-job"));
			JobsDescriptor jobs = (JobsDescriptor) context.getBean(LocksEndpoint.class).scope(SecurityContext.NONE, "jobs");
			assertThat(jobs.jobs()).singleElement().satisfies((described) -> {
				assertThat(described.backend()).isEqualTo("jobs");
				assertThat(described.lastClaimedTick()).as("read from the jobs backend's tick record").isNotNull();
			});
		});
	}

	@Test
	void aJobOnTheJdbcBackendIsJudgedByThatBackendsClockAlone() {
		this.runner.withUserConfiguration(JobConfiguration.class).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(Job.class).runs.poll(20, TimeUnit.SECONDS)).isNotNull();
			SingleInstanceScheduledBeanPostProcessor scheduling = context
				.getBean(SingleInstanceScheduledBeanPostProcessor.class);
			assertThat(scheduling.tickClock("jobs").offset()).as("measured by the jobs backend's claims").isPresent();
			assertThat(scheduling.tickClock().offset()).as("the default backend claimed no tick").isEmpty();
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			context.getBean(TickClockMetrics.class).bindTo(meters);
			assertThat(meters.get(TickClockMetrics.OFFSET).tag("backend", "jobs").gauge().value()).isNotNaN();
			assertThat(meters.get(TickClockMetrics.OFFSET).tag("backend", "redis").gauge().value()).isNaN();
			assertThat(meters.get(TickClockMetrics.OFFSET).tag("backend", "zk").gauge().value()).isNaN();
			assertThat(healthOf(context, "jobs").getDetails()).containsKey("clockOffset");
			assertThat(healthOf(context, "holdfast").getDetails()).doesNotContainKey("clockOffset");
			assertThat(healthOf(context, "zk").getDetails()).doesNotContainKey("clockOffset");
		});
	}

	@Test
	void aLeaderGroupOnTheZooKeeperBackendIsElectedThereAndItsElectionsAreInjectedByQualifier() {
		this.runner.withConfiguration(AutoConfigurations.of(HoldfastLeaderAutoConfiguration.class))
			.withUserConfiguration(LeaderConfiguration.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				Relay relay = context.getBean(Relay.class);
				context.publishEvent(new ApplicationReadyEvent(new SpringApplication(), new String[0],
						context.getSourceApplicationContext(), Duration.ZERO));
				await().atMost(Duration.ofSeconds(20)).until(() -> relay.zk().join("relay").isLeader());
				assertThat(relay.zk()).isSameAs(context.getBean("holdfastLeaderElections.zk"));
				assertThat(relay.poll()).isEqualTo("polled");
				LockEngine zk = context.getBean("holdfastLockTemplate.zk", LockEngine.class);
				assertThat(zk.heldLeases()).anyMatch((lease) -> lease.name().equals("leader"));
				assertThat(context.getBean(LockEngine.class).heldLeases()).as("the default backend's").isEmpty();
				assertThat(relay.main()).isSameAs(context.getBean("holdfastLeaderElections"));
				LeadersDescriptor leaders = context.getBean(LeadersEndpoint.class).leaders();
				assertThat(leaders.groups()).isEmpty();
				assertThat(leaders.backends().get("zk")).singleElement().satisfies((group) -> {
					assertThat(group.group()).isEqualTo("relay");
					assertThat(group.leader()).isTrue();
					assertThat(group.expires()).isNotNull();
				});
				MeterRegistry meters = context.getBean(MeterRegistry.class);
				assertThat(meters.get("holdfast.leader.is_leader").tag("group", "relay").tag("backend", "zk").gauge().value())
					.isEqualTo(1.0);
				assertThat(meters.get("holdfast.leader.terms").tag("group", "relay").tag("backend", "zk").counter().count())
					.isEqualTo(1.0);
			});
	}

	@Test
	void theApplicationsLockBackendBeanIsANamedBackendBesideTheDefaultOne() {
		this.runner.withUserConfiguration(OwnBackendConfiguration.class)
			.withPropertyValues("holdfast.backends.local.bean=localLocks")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(LockEngine.class).backendName()).isEqualTo("redis");
				LockEngine local = context.getBean("holdfastLockTemplate.local", LockEngine.class);
				assertThat(local.backend()).isSameAs(context.getBean("localLocks"));
				LockTemplate template = context.getBean(OwnBackendUser.class).template();
				assertThat(template).isSameAs(local);
				try (Lease lease = template.acquire("report", null, LockOptions.defaults())) {
					assertThat(lease.key()).isEqualTo("holdfast:local::report");
				}
				assertThat(health(context, "local")).isEqualTo(Status.UP);
			});
	}

	/** The health of the default backend ({@code holdfast}) or of the named one {@code backend}. */
	private static Status health(ApplicationContext context, String backend) {
		return healthOf(context, backend).getStatus();
	}

	private static Health healthOf(ApplicationContext context, String backend) {
		HealthIndicator indicator = backend.equals("holdfast")
				? context.getBean("holdfastHealthIndicator", HealthIndicator.class)
				: (HealthIndicator) context.getBean("holdfastBackendsHealthContributor", CompositeHealthContributor.class)
					.getContributor(backend);
		return indicator.health();
	}

	@Configuration(proxyBeanMethods = false)
	static class LockedConfiguration {

		@Bean
		Locked locked(DataSource dataSource) {
			return new Locked(new JdbcTemplate(dataSource));
		}

	}

	static class Locked {

		private final JdbcTemplate jdbc;

		Locked(JdbcTemplate jdbc) {
			this.jdbc = jdbc;
		}

		@DistributedLock(name = "report")
		public String onDefault(LockEngine main, LockEngine jobs, LockEngine zk) {
			return heldOnlyBy(main, jobs, zk);
		}

		@DistributedLock(name = "report", backend = "jobs")
		public String onJobs(LockEngine main, LockEngine jobs, LockEngine zk) {
			String key = heldOnlyBy(jobs, main, zk);
			assertThat(this.jdbc.queryForList("select lock_key from holdfast_lock", String.class)).contains(key);
			return key;
		}

		@DistributedSemaphore(name = "exports", permits = 2, backend = "jobs")
		public String permitOnJobs(LockEngine main, LockEngine jobs, LockEngine zk) {
			return heldOnlyBy(jobs, main, zk);
		}

		@DistributedLock(name = "report", backend = "zk")
		public String onZooKeeper(LockEngine main, LockEngine jobs, LockEngine zk) {
			return heldOnlyBy(zk, main, jobs);
		}

		/** The key of this method's lease, which {@code holder} holds and the others do not. */
		private static String heldOnlyBy(LockEngine holder, LockEngine other, LockEngine third) {
			String key = LockContext.requireLease().key();
			assertThat(holder.heldLeases()).anyMatch((lease) -> lease.key().equals(key));
			assertThat(other.heldLeases()).isEmpty();
			assertThat(third.heldLeases()).isEmpty();
			return key;
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class JobConfiguration {

		@Bean
		Job job(@Qualifier("jobs") LockEngine jobs, LockEngine main) {
			return new Job(jobs, main);
		}

	}

	static class Job {

		final BlockingQueue<String> runs = new LinkedBlockingQueue<>();

		private final LockEngine jobs;

		private final LockEngine main;

		Job(LockEngine jobs, LockEngine main) {
			this.jobs = jobs;
			this.main = main;
		}

		@SingleInstanceScheduled(name = "named-backends-job", fixedRate = "200ms", backend = "jobs")
		public void run() {
			String key = LockContext.requireLease().key();
			boolean onJobsOnly = this.jobs.heldLeases().stream().anyMatch((lease) -> lease.key().equals(key))
					&& this.main.heldLeases().isEmpty();
			this.runs.add(key + (onJobsOnly ? " held on jobs only" : " not held on jobs only"));
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class LeaderConfiguration {

		@Bean
		Relay relay(@Qualifier("zk") LeaderElections zk, LeaderElections main) {
			return new Relay(zk, main);
		}

	}

	static class Relay {

		private final LeaderElections zk;

		private final LeaderElections main;

		Relay(LeaderElections zk, LeaderElections main) {
			this.zk = zk;
			this.main = main;
		}

		public LeaderElections zk() {
			return this.zk;
		}

		public LeaderElections main() {
			return this.main;
		}

		@LeaderOnly(group = "relay", backend = "zk", onNotLeader = LeaderOnly.OnNotLeader.THROW)
		public String poll() {
			return "polled";
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class OwnBackendConfiguration {

		@Bean(defaultCandidate = false)
		InMemoryLockBackend localLocks() {
			return new InMemoryLockBackend();
		}

		@Bean
		OwnBackendUser ownBackendUser(@Qualifier("local") LockTemplate template) {
			return new OwnBackendUser(template);
		}

	}

	record OwnBackendUser(LockTemplate template) {
	}

	@Configuration(proxyBeanMethods = false)
	static class QualifiedConfiguration {

		@Bean
		Qualified qualified(LockTemplate main, @Qualifier("jobs") LockTemplate jobs,
				@Qualifier("zk") LockTemplate zk) {
			return new Qualified(main, jobs, zk);
		}

	}

	record Qualified(LockTemplate main, LockTemplate jobs, LockTemplate zk) {
	}


}
