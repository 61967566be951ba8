package dev.holdfast.autoconfigure;

import java.time.Duration;

import javax.sql.DataSource;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.condition.ConditionEvaluationReport;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceInitializationAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Primary;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import dev.holdfast.DistributedLock;
import dev.holdfast.DistributedSemaphore;
import dev.holdfast.LeaderOnly;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockTemplate;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.core.LockEngine;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Named backends that cannot work fail at startup, naming the fix (NBK-1, NBK-3 in
 * docs/DESIGN.md); on in-memory backends and H2, no server needed.
 */
@ExtendWith(OutputCaptureExtension.class)
class NamedBackendStartupTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, HoldfastAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=jdbc:h2:mem:named-backends", "holdfast.backend=memory",
				"holdfast.backends.jobs.type=jdbc", "holdfast.backends.jobs.jdbc.initialize-schema=always",
				"holdfast.backends.zk.type=memory");

	/** An application without named backends, as before issue 33. */
	private final ApplicationContextRunner compatibility = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class));

	@Test
	void aMisspelledSettingOfANamedBackendFailsAtStartupAsUnderHoldfastType() {
		this.runner.withPropertyValues("holdfast.backends.jobs.jdbc.tabel-name=locks", "holdfast.backends.jobs.clinet=ds")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).isInstanceOf(LockConfigurationException.class)
					.hasMessageContaining("holdfast.backends.jobs.jdbc.tabel-name")
					.hasMessageContaining("holdfast.backends.jobs.clinet")
					.message()
					.doesNotContain("holdfast.backends.jobs.jdbc.initialize-schema");
			});
	}

	@Test
	void aBackendNamedAfterATypeFailsAtStartup() {
		this.runner.withPropertyValues("holdfast.backends.redis.type=redis").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("holdfast.backends.redis is not a valid backend name");
		});
	}

	@Test
	void aLockBackendBeanThatIsADefaultCandidateFailsAtStartupNamingTheFix() {
		this.runner.withUserConfiguration(DefaultCandidateBackendConfiguration.class)
			.withPropertyValues("holdfast.backends.local.bean=localLocks")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).isInstanceOf(LockConfigurationException.class)
					.hasMessageContaining("The LockBackend bean 'localLocks' (holdfast.backends.local.bean) is a default"
							+ " candidate");
				assertThat(((LockConfigurationException) context.getStartupFailure()).getAction())
					.contains("@Bean(defaultCandidate = false)");
			});
	}

	@Test
	void aDefaultBackendNamedAsANamedBackendFailsAtStartupInsteadOfSharingItsClockOffsetGauge() {
		this.runner.withConfiguration(AutoConfigurations.of(HoldfastActuatorAutoConfiguration.class))
			.withBean(SimpleMeterRegistry.class)
			.withBean(LockBackend.class, () -> new InMemoryLockBackend() {

				@Override
				public String name() {
					return "zk";
				}

			})
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).rootCause()
					.hasMessage("The default backend's name 'zk' (its LockBackend's name()) is also the named backend"
							+ " holdfast.backends.zk: their meters, tagged backend=zk, would be one. Rename the named"
							+ " backend, or give the default LockBackend bean another name()");
			});
	}

	@Test
	void aBackendNamingAMissingBeanFailsAtStartupNamingTheLockBackendBeans() {
		this.runner.withUserConfiguration(DefaultCandidateBackendConfiguration.class)
			.withPropertyValues("holdfast.backends.local.bean=localLock")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).isInstanceOf(LockConfigurationException.class)
					.hasMessageContaining("holdfast.backends.local.bean is 'localLock', but there is no bean");
				assertThat(((LockConfigurationException) context.getStartupFailure()).getAction())
					.contains("localLocks");
			});
	}

	@Test
	void anExplicitKeyPrefixThatMergesTwoBackendsKeysFailsAtStartupNamingIt() {
		this.runner.withPropertyValues("holdfast.backend=jdbc", "holdfast.jdbc.initialize-schema=always",
				"holdfast.backends.jobs.key-prefix=holdfast:jobs:")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).isInstanceOf(LockConfigurationException.class)
					.hasMessageContaining("The key prefixes 'holdfast:' of backend 'default' and 'holdfast:jobs:' of "
							+ "backend 'jobs' on the jdbc client 'dataSource' let a key of one be a key of the other");
				assertThat(((LockConfigurationException) context.getStartupFailure()).getAction())
					.startsWith("Remove holdfast.backends.jobs.key-prefix");
			});
	}

	@Test
	void keyPrefixesOverlapUnlessTheLongerAddsTwoColonsOrStartsWithOne() {
		assertThat(NamedBackendsRegistrar.overlap("holdfast:", "holdfast:")).isTrue();
		assertThat(NamedBackendsRegistrar.overlap("holdfast:", "holdfast:jobs:")).as("lock jobs, key x = lock x").isTrue();
		assertThat(NamedBackendsRegistrar.overlap("holdfast:", "holdfast:jobs")).isTrue();
		assertThat(NamedBackendsRegistrar.overlap("holdfast:", "holdfast:jobs::")).as("the generated prefix").isFalse();
		assertThat(NamedBackendsRegistrar.overlap("holdfast:jobs:", "holdfast:jobs::")).isFalse();
		assertThat(NamedBackendsRegistrar.overlap("holdfast:", "tenant:")).isFalse();
	}

	@Test
	void namedLeaderElectionsExistOnlyWithTheLeaderAutoConfiguration() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).doesNotHaveBean("holdfastLeaderElections.jobs")
				.doesNotHaveBean("holdfastLeaderElectionLifecycle.jobs")
				.hasBean("holdfastLockTemplate.jobs");
		});
		this.runner.withConfiguration(AutoConfigurations.of(HoldfastLeaderAutoConfiguration.class)).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context).hasBean("holdfastLeaderElections.jobs").hasBean("holdfastLeaderElectionLifecycle.jobs");
		});
	}

	@Test
	void aNamedBackendUnreachableAtStartupIsNamedWithItsOwnProperties(CapturedOutput output) {
		this.runner.withUserConfiguration(UnreachableDataSourceConfiguration.class)
			.withPropertyValues("holdfast.backends.jobs.client=unreachable", "holdfast.fail-fast=true")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).rootCause()
					.hasMessageStartingWith("Backend 'jobs': Holdfast could not reach its jdbc backend at startup");
				assertThat(((LockConfigurationException) NestedExceptionUtils.getRootCause(context.getStartupFailure()))
					.getAction()).startsWith("Check holdfast.backends.jobs.client (the client bean it uses");
			});
		this.runner.withUserConfiguration(UnreachableDataSourceConfiguration.class)
			.withPropertyValues("holdfast.backends.jobs.client=unreachable", "holdfast.fail-fast=false")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				// Without fail-fast the probe WARNs from its own thread, after the start (BSL-6).
				await().atMost(Duration.ofSeconds(10))
					.untilAsserted(() -> assertThat(output.toString())
						.contains("Holdfast could not reach its backend 'jobs' (jdbc) at startup")
						.contains("Check holdfast.backends.jobs.client (the client bean it uses"));
			});
	}

	@Test
	void aNamedBackendsLockBackendIsInjectedByItsQualifier() {
		this.runner.withUserConfiguration(QualifiedBackendUser.class).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(QualifiedBackendUser.class).zk).isSameAs(context.getBean("holdfastLockBackend.zk"));
		});
	}

	@Test
	void settingsANamedBackendWouldIgnoreFailAtStartup() {
		this.runner.withPropertyValues("holdfast.backends.zk.redis.channel=locks").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("'holdfast.backends.zk.redis.channel'");
		});
		this.runner.withPropertyValues("holdfast.backends.zk.client=dataSource").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("holdfast.backends.zk.client is set, but a memory backend uses no client bean");
		});
		this.runner.withPropertyValues("holdfast.backends.zk.type=zookeeper", "holdfast.backends.zk.client=curator",
				"holdfast.backends.zk.zookeeper.connect-string=localhost:2181")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).isInstanceOf(LockConfigurationException.class)
					.hasMessageContaining("holdfast.backends.zk.client and holdfast.backends.zk.zookeeper.connect-string "
							+ "are both set");
			});
	}

	@Test
	void aNamedJdbcBackendIsBuiltAfterTheDatabaseInitialization() {
		this.runner.withConfiguration(AutoConfigurations.of(DataSourceInitializationAutoConfiguration.class))
			.withPropertyValues("spring.sql.init.mode=always")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBeanFactory().getBeanDefinition("holdfastLockBackend.jobs").getDependsOn())
					.contains("dataSourceScriptDatabaseInitializer");
			});
	}

	@Test
	void theConditionReportNamesTheNamedBackendsWithoutTheActuator() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(ConditionEvaluationReport.get(context.getBeanFactory()).getConditionAndOutcomesBySource())
				.hasEntrySatisfying(HoldfastAutoConfiguration.class.getName() + "#holdfastNamedBackendsRegistrar",
						(outcomes) -> assertThat(outcomes.iterator().next().getOutcome().getMessage())
							.contains("jobs (jdbc)", "zk (memory)"));
		});
		this.compatibility.run((context) -> assertThat(context).doesNotHaveBean(NamedBackendsRegistrar.class));
	}

	@Test
	void backendsOnOneClientBeanAreSaidToShareItWhetherTheyNameItOrNot(CapturedOutput output) {
		this.runner.withPropertyValues("holdfast.backend=jdbc", "holdfast.jdbc.initialize-schema=always",
				"holdfast.backends.reports.type=jdbc", "holdfast.backends.reports.client=dataSource")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(output).contains("Holdfast backends [default, jobs, reports] share the jdbc client "
						+ "'dataSource'");
			});
	}

	@Test
	void aDecoratedLockBackendWithoutNamedBackendsStartsAsBefore() {
		this.compatibility.withUserConfiguration(DecoratorConfiguration.class).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(LockEngine.class).backend()).isSameAs(context.getBean("decorated"));
			assertThat(context.getBeansOfType(LockEngine.class)).containsOnlyKeys("holdfastLockTemplate");
		});
	}

	@Test
	void aQualifiedLockBackendWithoutNamedBackendsIsTheDefaultAsBefore() {
		this.compatibility.withUserConfiguration(QualifiedBackendConfiguration.class).run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(LockEngine.class).backend()).isSameAs(context.getBean("redisLocks"));
			assertThat(context.getBeansOfType(LockEngine.class)).containsOnlyKeys("holdfastLockTemplate");
		});
	}

	@Test
	void anUnknownBackendOnAJobFailsAtStartupNamingTheKnownOnes() {
		this.runner.withUserConfiguration(UnknownJobBackendConfiguration.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("@SingleInstanceScheduled on ")
				.hasMessageContaining("names the backend 'postgres', which is not configured");
		});
	}

	@Test
	void anUnknownBackendOnAnAnnotationFailsAtStartupNamingTheKnownOnes() {
		this.runner.withUserConfiguration(UnknownBackendConfiguration.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("names the backend 'job', which is not configured")
				.hasMessageContaining("\"\" (the default), jobs, zk");
		});
	}

	@Test
	void anUnknownBackendOnASemaphoreFailsAtStartupNamingTheKnownOnes() {
		this.runner.withUserConfiguration(UnknownSemaphoreBackendConfiguration.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("@DistributedSemaphore")
				.hasMessageContaining("names the backend 'job', which is not configured")
				.hasMessageContaining("\"\" (the default), jobs, zk");
		});
	}

	@Test
	void anUnknownBackendOnALeaderOnlyMethodFailsAtStartupNamingTheKnownOnes() {
		this.runner.withConfiguration(AutoConfigurations.of(HoldfastLeaderAutoConfiguration.class))
			.withUserConfiguration(UnknownLeaderBackendConfiguration.class)
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context.getStartupFailure()).rootCause()
					.isInstanceOf(LockConfigurationException.class)
					.hasMessageContaining("@LeaderOnly")
					.hasMessageContaining("names the backend 'zookeeper', which is not configured")
					.hasMessageContaining("\"\" (the default), jobs, zk");
			});
	}

	@Test
	void aNamedBackendWithoutATypeFailsAtStartupNamingTheProperty() {
		this.runner.withPropertyValues("holdfast.backends.orders.client=dataSource").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("holdfast.backends.orders.type is not set");
		});
	}

	@Test
	void aNamedBackendsSettingsAreCheckedAsTheDefaultOnesAndNamedByItsOwnProperty() {
		this.runner.withPropertyValues("holdfast.backends.jobs.jdbc.query-timeout=0s").run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).rootCause()
				.hasMessageContaining("Backend 'jobs': holdfast.backends.jobs.jdbc.query-timeout is PT0S");
		});
	}

	@Configuration(proxyBeanMethods = false)
	static class DefaultCandidateBackendConfiguration {

		@Bean
		InMemoryLockBackend localLocks() {
			return new InMemoryLockBackend();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UnreachableDataSourceConfiguration {

		@Bean(defaultCandidate = false)
		DataSource unreachable() {
			return new DriverManagerDataSource("jdbc:postgresql://127.0.0.1:1/none", "none", "none");
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UnknownQualifierConfiguration {

		@Bean
		String misqualified(@Qualifier("jbos") LockTemplate jobs) {
			return "misqualified";
		}

	}

	static class QualifiedBackendUser {

		final LockBackend zk;

		QualifiedBackendUser(@Qualifier("zk") LockBackend zk) {
			this.zk = zk;
		}

	}

	/** The decorator pattern: a qualified raw backend under a {@code @Primary} wrapper. */
	@Configuration(proxyBeanMethods = false)
	static class DecoratorConfiguration {

		@Bean
		@Qualifier("raw")
		InMemoryLockBackend raw() {
			return new InMemoryLockBackend();
		}

		@Bean
		@Primary
		LockBackend decorated(@Qualifier("raw") LockBackend raw) {
			return new Decorated(raw);
		}

	}

	record Decorated(LockBackend raw) implements LockBackend {

		@Override
		public String name() {
			return this.raw.name();
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			return this.raw.tryAcquire(key, owner, ttl);
		}

		@Override
		public boolean release(String key, String owner) {
			return this.raw.release(key, owner);
		}

	}

	/** A lone backend with a qualifier that names a backend type. */
	@Configuration(proxyBeanMethods = false)
	static class QualifiedBackendConfiguration {

		@Bean
		@Qualifier("redis")
		InMemoryLockBackend redisLocks() {
			return new InMemoryLockBackend();
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UnknownJobBackendConfiguration {

		@Bean
		MisnamedJob misnamedJob() {
			return new MisnamedJob();
		}

	}

	static class MisnamedJob {

		@SingleInstanceScheduled(fixedRate = "1h", backend = "postgres")
		public void run() {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UnknownBackendConfiguration {

		@Bean
		Misnamed misnamed() {
			return new Misnamed();
		}

	}

	static class Misnamed {

		@DistributedLock(backend = "job")
		public void run() {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UnknownSemaphoreBackendConfiguration {

		@Bean
		MisnamedSemaphore misnamedSemaphore() {
			return new MisnamedSemaphore();
		}

	}

	static class MisnamedSemaphore {

		@DistributedSemaphore(name = "exports", permits = 2, backend = "job")
		public void export() {
		}

	}

	@Configuration(proxyBeanMethods = false)
	static class UnknownLeaderBackendConfiguration {

		@Bean
		MisnamedLeader misnamedLeader() {
			return new MisnamedLeader();
		}

	}

	static class MisnamedLeader {

		@LeaderOnly(group = "relay", backend = "zookeeper")
		public void poll() {
		}

	}

}
