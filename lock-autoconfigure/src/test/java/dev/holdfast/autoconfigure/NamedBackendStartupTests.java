package dev.holdfast.autoconfigure;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.DistributedLock;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Named backends that cannot work fail at startup, naming the fix (NBK-1, NBK-3 in
 * docs/DESIGN.md); on in-memory backends and H2, no server needed.
 */
class NamedBackendStartupTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, HoldfastAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=jdbc:h2:mem:named-backends", "holdfast.backend=memory",
				"holdfast.backends.jobs.type=jdbc", "holdfast.backends.jobs.jdbc.initialize-schema=always",
				"holdfast.backends.zk.type=memory");

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
	void aQualifiedLockBackendThatIsADefaultCandidateFailsAtStartupNamingTheFix() {
		this.runner.withUserConfiguration(DefaultCandidateBackendConfiguration.class).run((context) -> {
			assertThat(context).hasFailed();
			assertThat(context.getStartupFailure()).isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("The LockBackend bean 'localLocks' is qualified 'local' but is a default candidate");
			assertThat(((LockConfigurationException) context.getStartupFailure()).getAction())
				.contains("@Bean(defaultCandidate = false)");
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
		@Qualifier("local")
		InMemoryLockBackend localLocks() {
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
}
