package dev.holdfast.autoconfigure;

import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.availability.ApplicationAvailabilityBean;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroups;
import org.springframework.boot.health.autoconfigure.actuate.endpoint.AvailabilityProbesAutoConfiguration;
import org.springframework.boot.health.autoconfigure.actuate.endpoint.HealthEndpointAutoConfiguration;
import org.springframework.boot.health.autoconfigure.application.AvailabilityHealthContributorAutoConfiguration;
import org.springframework.boot.health.autoconfigure.contributor.HealthContributorAutoConfiguration;
import org.springframework.boot.health.autoconfigure.registry.HealthContributorRegistryAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Where the {@code holdfast} health indicator counts, as the README says: in the health
 * endpoint's overall status, not in the liveness or readiness probes (Spring Boot's advice for
 * external systems), unless the application adds it to a group.
 */
class HoldfastHealthGroupsTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class,
				HoldfastActuatorAutoConfiguration.class, HealthContributorAutoConfiguration.class,
				HealthContributorRegistryAutoConfiguration.class, HealthEndpointAutoConfiguration.class,
				AvailabilityHealthContributorAutoConfiguration.class, AvailabilityProbesAutoConfiguration.class))
		.withBean(ApplicationAvailabilityBean.class)
		.withPropertyValues("holdfast.backend=memory", "management.endpoint.health.probes.enabled=true");

	@Test
	void holdfastCountsInTheOverallHealthButNotInTheProbes() {
		this.runner.run((context) -> {
			HealthEndpointGroups groups = context.getBean(HealthEndpointGroups.class);
			assertThat(groups.getPrimary().isMember("holdfast")).isTrue();
			assertThat(groups.get("liveness").isMember("holdfast")).isFalse();
			assertThat(groups.get("readiness").isMember("holdfast")).isFalse();
		});
	}

	@Test
	void applicationCanPutHoldfastInReadiness() {
		this.runner.withPropertyValues("management.endpoint.health.group.readiness.include=readinessState,holdfast")
			.run((context) -> assertThat(
					context.getBean(HealthEndpointGroups.class).get("readiness").isMember("holdfast"))
				.isTrue());
	}

}
