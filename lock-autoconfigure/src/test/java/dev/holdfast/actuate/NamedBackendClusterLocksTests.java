package dev.holdfast.actuate;

import org.junit.jupiter.api.Test;

import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.actuate.ClusterLocksView.ClusterLockDescriptor;
import dev.holdfast.actuate.ClusterLocksView.ClusterLocksDescriptor;
import dev.holdfast.actuate.ClusterLocksView.ForcedReleaseDescriptor;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code locks/cluster} and the forced release cover the default backend only, also when a named
 * backend keeps its locks on the same database (NBK-9 in docs/DESIGN.md).
 */
class NamedBackendClusterLocksTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, HoldfastAutoConfiguration.class,
				HoldfastActuatorAutoConfiguration.class, EndpointAutoConfiguration.class))
		.withPropertyValues("spring.datasource.url=jdbc:h2:mem:named-cluster-locks", "holdfast.backend=jdbc",
				"holdfast.jdbc.initialize-schema=always", "holdfast.backends.jobs.type=jdbc",
				"management.endpoint.locks.show-values=always",
				"management.endpoints.web.exposure.include=locks");

	@Test
	void aNamedBackendsLocksOnTheDefaultsDatabaseAreNeitherListedNorReleasedByForce() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed();
			LockTemplate jobs = context.getBean("holdfastLockTemplate.jobs", LockTemplate.class);
			LocksEndpoint endpoint = context.getBean(LocksEndpoint.class);
			try (Lease named = jobs.acquire("report", "2024", LockOptions.defaults());
					Lease own = context.getBean(LockTemplate.class).acquire("report", "2024", LockOptions.defaults())) {
				ClusterLocksDescriptor cluster = (ClusterLocksDescriptor) endpoint.scope(SecurityContext.NONE, "cluster");
				assertThat(cluster.locks()).extracting(ClusterLockDescriptor::key).containsExactly("holdfast:report:2024");
				ForcedReleaseDescriptor refused = endpoint.release(SecurityContext.NONE, named.key(), null);
				assertThat(refused.released()).isFalse();
				assertThat(refused.reason()).startsWith("A lock of the backend 'jobs'");
				assertThat(named.isValid()).isTrue();
				assertThat(endpoint.release(SecurityContext.NONE, own.key(), null).released()).isTrue();
			}
		});
	}

}
