package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.Lease;
import dev.holdfast.LeaseInfo;
import dev.holdfast.LockListener.LockObservation;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockOptions;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.actuate.LockBackendHealthIndicator;
import dev.holdfast.actuate.LockMetricsListener;
import dev.holdfast.actuate.LockObservationListener;
import dev.holdfast.actuate.LocksEndpoint.LeaseDescriptor;
import dev.holdfast.actuate.LocksEndpoint;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.EngineLease;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

class HoldfastActuatorAutoConfigurationTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class,
				HoldfastActuatorAutoConfiguration.class, EndpointAutoConfiguration.class))
		.withPropertyValues("holdfast.backend=memory");

	private final String name = "job-" + UUID.randomUUID();

	@Test
	void meterRegistryBeanGetsAcquisitionHoldAndOutcomeMetersTaggedByName() {
		this.runner.withBean(MeterRegistry.class, SimpleMeterRegistry::new).run((context) -> {
			assertThat(context).hasSingleBean(LockMetricsListener.class);
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			MeterRegistry registry = context.getBean(MeterRegistry.class);
			try (Lease lease = template.acquire(this.name, "customer-42", LockOptions.defaults())) {
				Thread other = new Thread(() -> assertThatExceptionOfType(LockNotAcquiredException.class)
					.isThrownBy(() -> template.acquire(this.name, "customer-42", LockOptions.defaults())));
				other.start();
				other.join();
			}
			assertThat(acquireTimer(registry, "acquired").count()).isEqualTo(1);
			assertThat(acquireTimer(registry, "not_acquired").count()).isEqualTo(1);
			assertThat(registry.get(LockMetricsListener.HELD).tag("name", this.name).timer().count()).isEqualTo(1);
			assertThat(registry.getMeters()).allSatisfy((meter) -> assertThat(meter.getId().getTags())
				.noneSatisfy((tag) -> assertThat(tag.getValue()).contains("customer-42")));
		});
	}

	@Test
	void skippedTicksAndLostLeasesAreCounted() {
		SimpleMeterRegistry registry = new SimpleMeterRegistry();
		LockMetricsListener listener = new LockMetricsListener(registry);
		listener.tickSkipped("report", "memory", "ran-elsewhere");
		listener.leaseLost("report", "memory", LeaseInfo.EXCLUSIVE);
		assertThat(registry.get(LockMetricsListener.SKIPPED).tags("name", "report", "backend", "memory", "reason", "ran-elsewhere").counter()
			.count()).isEqualTo(1);
		assertThat(registry.get(LockMetricsListener.LOST).tags("name", "report", "backend", "memory", "mode", "exclusive").counter()
			.count()).isEqualTo(1);
	}

	@Test
	void scheduledTicksSkippedBecauseTheJobLockIsHeldAreCounted() {
		this.runner.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
			.withBean(HeldJob.class)
			.run((context) -> {
				MeterRegistry registry = context.getBean(MeterRegistry.class);
				await().atMost(Duration.ofSeconds(10))
					.untilAsserted(() -> assertThat(registry.find(LockMetricsListener.SKIPPED)
						.tags("name", "held-job", "backend", "memory")
						.counter()).isNotNull().satisfies((counter) -> assertThat(counter.count()).isPositive()));
				assertThat(context.getBean(HeldJob.class).runs.get()).isEqualTo(1);
			});
	}

	@Test
	void noMetricsWithoutAMeterRegistryBean() {
		this.runner.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(LockMetricsListener.class));
	}

	@Test
	void noMetricsWithoutMicrometer() {
		this.runner.withClassLoader(new FilteredClassLoader("io.micrometer.core"))
			.run((context) -> assertThat(context).hasNotFailed()
				.doesNotHaveBean(LockMetricsListener.class)
				.hasSingleBean(DefaultLockTemplate.class));
	}

	@Test
	void userMetricsListenerWins() {
		SimpleMeterRegistry mine = new SimpleMeterRegistry();
		this.runner.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
			.withBean("myListener", LockMetricsListener.class, () -> new LockMetricsListener(mine))
			.run((context) -> assertThat(context).hasSingleBean(LockMetricsListener.class)
				.hasBean("myListener"));
	}

	@Test
	void observationRegistryWithBootsMeterHandlerGetsObservationsThatProduceTheTimers() {
		this.runner.withConfiguration(AutoConfigurations.of(ObservationAutoConfiguration.class,
				MetricsAutoConfiguration.class))
			.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
			.run((context) -> {
				assertThat(context).hasSingleBean(LockObservationListener.class);
				assertThat(context.getBean(LockMetricsListener.class).recordsTimers()).isFalse();
				DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
				try (Lease lease = template.acquire(this.name, "customer-42", LockOptions.defaults())) {
					assertThat(EngineLease.observationOf(lease).hold().isNoop()).isFalse();
				}
				MeterRegistry registry = context.getBean(MeterRegistry.class);
				assertThat(registry.find(LockMetricsListener.ACQUIRE).timers()).singleElement()
					.satisfies((timer) -> assertThat(timer.getId().getTag("error")).isEqualTo("none"));
				assertThat(registry.find(LockMetricsListener.HELD).timers()).singleElement()
					.satisfies((timer) -> assertThat(timer.getId().getTag("outcome")).isEqualTo("released"));
			});
	}

	@Test
	void observationsWithoutAMeterHandlerLeaveTheTimersToTheMetricsListener() {
		this.runner.withConfiguration(AutoConfigurations.of(ObservationAutoConfiguration.class))
			.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
			.run((context) -> {
				assertThat(context).hasSingleBean(LockObservationListener.class);
				assertThat(context.getBean(LockMetricsListener.class).recordsTimers()).isTrue();
				context.getBean(DefaultLockTemplate.class).executeLocked(this.name, null, LockOptions.defaults(),
						() -> null);
				assertThat(acquireTimer(context.getBean(MeterRegistry.class), "acquired").count()).isEqualTo(1);
			});
	}

	@Test
	void noObservationsWithoutAnObservationRegistryBean() {
		this.runner.run((context) -> {
			assertThat(context).hasNotFailed().doesNotHaveBean(LockObservationListener.class);
			try (Lease lease = context.getBean(DefaultLockTemplate.class)
				.acquire(this.name, null, LockOptions.defaults())) {
				assertThat(EngineLease.observationOf(lease)).isSameAs(LockObservation.NONE);
			}
		});
	}

	@Test
	void noObservationsWithoutMicrometerObservation() {
		this.runner.withConfiguration(AutoConfigurations.of(ObservationAutoConfiguration.class))
			.withClassLoader(new FilteredClassLoader(ObservationRegistry.class))
			.run((context) -> assertThat(context).hasNotFailed()
				.doesNotHaveBean(LockObservationListener.class)
				.hasSingleBean(DefaultLockTemplate.class));
	}

	@Test
	void noOpObservationRegistryObservesNothing() {
		this.runner.withBean(ObservationRegistry.class, () -> ObservationRegistry.NOOP).run((context) -> {
			assertThat(context).hasSingleBean(LockObservationListener.class);
			try (Lease lease = context.getBean(DefaultLockTemplate.class)
				.acquire(this.name, null, LockOptions.defaults())) {
				assertThat(EngineLease.observationOf(lease)).isSameAs(LockObservation.NONE);
			}
		});
	}

	@Test
	void userObservationListenerWins() {
		this.runner.withBean(ObservationRegistry.class, ObservationRegistry::create)
			.withBean("myObservations", LockObservationListener.class,
					() -> new LockObservationListener(ObservationRegistry.create()))
			.run((context) -> assertThat(context).hasSingleBean(LockObservationListener.class)
				.hasBean("myObservations"));
	}

	@Test
	void locksEndpointIsNotAvailableUnlessExposed() {
		this.runner.run((context) -> assertThat(context).doesNotHaveBean(LocksEndpoint.class));
	}

	@Test
	void exposedLocksEndpointListsHeldLeases() {
		this.runner.withPropertyValues("management.endpoints.web.exposure.include=locks").run((context) -> {
			LocksEndpoint endpoint = context.getBean(LocksEndpoint.class);
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			assertThat(endpoint.locks(SecurityContext.NONE).leases()).isEmpty();
			try (Lease lease = template.acquire(this.name, 7, LockOptions.defaults())) {
				LocksEndpoint.LocksDescriptor locks = endpoint.locks(SecurityContext.NONE);
				assertThat(locks.backend()).isEqualTo("memory");
				assertThat(locks.leases()).singleElement().satisfies((held) -> {
					assertThat(held.name()).isEqualTo(this.name);
					assertThat(held.key()).as("key part masked by default")
						.isEqualTo(LockSettings.defaults().shown("holdfast:" + this.name + ":7"))
						.startsWith("holdfast:" + this.name + ":******#");
					assertThat(held.fencingToken()).isEqualTo(lease.fencingToken());
					assertThat(held.acquired()).isEqualTo(lease.acquiredAt());
					assertThat(held.expires()).isAfter(held.acquired());
					assertThat(held.valid()).isTrue();
				});
			}
			assertThat(endpoint.locks(SecurityContext.NONE).leases()).extracting(LeaseDescriptor::key).isEmpty();
		});
	}

	@Test
	void aMaskedKeyInAMessageMatchesTheEndpointsEntry() {
		this.runner.withPropertyValues("management.endpoints.web.exposure.include=locks").run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			try (Lease alice = template.acquire(this.name, "alice@example.com", LockOptions.defaults());
					Lease bob = template.acquire(this.name, "bob@example.com", LockOptions.defaults());
					DefaultLockTemplate other = new DefaultLockTemplate(context.getBean(LockBackend.class),
							LockSettings.defaults())) {
				List<String> listed = context.getBean(LocksEndpoint.class)
					.locks(SecurityContext.NONE)
					.leases()
					.stream()
					.map(LeaseDescriptor::key)
					.toList();
				assertThat(listed).hasSize(2).doesNotHaveDuplicates().noneMatch((key) -> key.contains("example.com"));
				String bobListed = LockSettings.defaults().shown(bob.key());
				assertThat(listed).contains(bobListed);
				assertThatExceptionOfType(LockNotAcquiredException.class)
					.isThrownBy(() -> other.acquire(this.name, "bob@example.com", LockOptions.defaults()))
					.withMessageContaining("'" + bobListed + "'");
			}
		});
	}

	@Test
	void locksEndpointShowsKeyValuesOnlyAsShowValuesAllows() {
		SecurityContext operator = securityContext("OPERATOR");
		SecurityContext other = securityContext("USER");
		this.runner.withPropertyValues("management.endpoints.web.exposure.include=locks").run((context) -> {
			try (Lease lease = context.getBean(DefaultLockTemplate.class).acquire(this.name, "alice@example.com",
					LockOptions.defaults())) {
				LocksEndpoint endpoint = context.getBean(LocksEndpoint.class);
				assertThat(endpoint.locks(operator).leases()).extracting(LeaseDescriptor::key)
					.containsExactly(LockSettings.defaults().shown(lease.key()));
			}
		});
		this.runner.withPropertyValues("management.endpoints.web.exposure.include=locks",
				"management.endpoint.locks.show-values=always").run((context) -> {
			try (Lease lease = context.getBean(DefaultLockTemplate.class).acquire(this.name, "alice@example.com",
					LockOptions.defaults())) {
				LocksEndpoint endpoint = context.getBean(LocksEndpoint.class);
				assertThat(endpoint.locks(SecurityContext.NONE).leases()).extracting(LeaseDescriptor::key)
					.containsExactly(lease.key());
			}
		});
		this.runner.withPropertyValues("management.endpoints.web.exposure.include=locks",
				"management.endpoint.locks.show-values=when-authorized", "management.endpoint.locks.roles=OPERATOR")
			.run((context) -> {
				try (Lease lease = context.getBean(DefaultLockTemplate.class).acquire(this.name, "alice@example.com",
						LockOptions.defaults())) {
					LocksEndpoint endpoint = context.getBean(LocksEndpoint.class);
					assertThat(endpoint.locks(operator).leases()).extracting(LeaseDescriptor::key)
						.containsExactly(lease.key());
					assertThat(endpoint.locks(other).leases()).extracting(LeaseDescriptor::key)
						.containsExactly(LockSettings.defaults().shown(lease.key()));
					assertThat(endpoint.locks(SecurityContext.NONE).leases()).extracting(LeaseDescriptor::key)
						.containsExactly(LockSettings.defaults().shown(lease.key()));
				}
			});
	}

	private static SecurityContext securityContext(String role) {
		return new SecurityContext() {

			@Override
			public java.security.Principal getPrincipal() {
				return () -> "someone";
			}

			@Override
			public boolean isUserInRole(String candidate) {
				return role.equals(candidate);
			}

		};
	}

	@Test
	void noEndpointWithoutActuator() {
		this.runner.withClassLoader(new FilteredClassLoader(Endpoint.class))
			.withPropertyValues("management.endpoints.web.exposure.include=locks")
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(LocksEndpoint.class));
	}

	@Test
	void healthIndicatorReportsMemoryBackendUp() {
		this.runner.run((context) -> {
			assertThat(context).hasBean("holdfastHealthIndicator");
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			try (Lease lease = template.acquire(this.name, null, LockOptions.defaults())) {
				Health health = context.getBean(LockBackendHealthIndicator.class).health(true);
				assertThat(health.getStatus()).isEqualTo(Status.UP);
				assertThat(health.getDetails()).containsEntry("backend", "memory").containsEntry("held", 1)
					.containsEntry("locks", 1);
			}
		});
	}

	@Test
	void healthIndicatorCanBeDisabled() {
		this.runner.withPropertyValues("management.health.holdfast.enabled=false")
			.run((context) -> assertThat(context).doesNotHaveBean(LockBackendHealthIndicator.class));
	}

	@Test
	void noHealthIndicatorWithoutSpringBootHealth() {
		this.runner.withClassLoader(new FilteredClassLoader(HealthIndicator.class))
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(LockBackendHealthIndicator.class));
	}

	static class HeldJob {

		final AtomicInteger runs = new AtomicInteger();

		@SingleInstanceScheduled(fixedRate = "50ms", name = "held-job", lockAtLeastFor = "1m")
		void run() {
			this.runs.incrementAndGet();
		}

	}

	private Timer acquireTimer(MeterRegistry registry, String outcome) {
		return registry.get(LockMetricsListener.ACQUIRE)
			.tags("name", this.name, "backend", "memory", "outcome", outcome)
			.timer();
	}

}
