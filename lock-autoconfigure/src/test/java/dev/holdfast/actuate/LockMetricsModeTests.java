package dev.holdfast.actuate;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicBoolean;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.Lease;
import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * OBS-14: every meter of a lock carries its {@code mode} ({@code exclusive}, {@code permit},
 * {@code read}), the counters {@code holdfast.lock.lost} and {@code holdfast.lock.release.failed}
 * too, with or without an observation registry, and the timers the metrics listener records
 * when no observation makes them.
 */
class LockMetricsModeTests {

	private static final LockOptions SHORT = LockOptions.defaults().leaseTime(Duration.ofSeconds(1));

	private final String name = "report-" + UUID.randomUUID();

	private ApplicationContextRunner runner(boolean observations) {
		ApplicationContextRunner runner = new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class,
					HoldfastActuatorAutoConfiguration.class))
			.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
			.withBean(FailsOneRelease.class, FailsOneRelease::new);
		return observations ? runner.withConfiguration(
				AutoConfigurations.of(ObservationAutoConfiguration.class, MetricsAutoConfiguration.class)) : runner;
	}

	/** The observations' timers had the mode already: {@code LockObservationTests} (OBS-14). */
	@Test
	void withoutObservationsTheTimersOfALockAPermitAndAReadHoldCarryTheirMode() {
		runner(false).run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			template.acquire(this.name, "a", LockOptions.defaults()).close();
			template.acquirePermit(this.name, "b", 2, LockOptions.defaults()).close();
			template.acquire(this.name, "c", LockOptions.defaults().mode(LockMode.READ)).close();
			for (String mode : new String[] { "exclusive", "permit", "read" }) {
				assertThat(meters.get(LockMetricsListener.ACQUIRE)
					.tags("name", this.name, "mode", mode, "outcome", "acquired")
					.timer()
					.count()).as("acquire " + mode).isEqualTo(1);
				await().atMost(Duration.ofSeconds(5))
					.untilAsserted(() -> assertThat(meters.get(LockMetricsListener.HELD)
						.tags("name", this.name, "mode", mode)
						.timer()
						.count()).as("held " + mode).isEqualTo(1));
			}
		});
	}

	@ParameterizedTest(name = "observations: {0}")
	@ValueSource(booleans = { false, true })
	void aReadLeaseAndAPermitReleasedByForceAreCountedLostWithTheirMode(boolean observations) {
		runner(observations).run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			FailsOneRelease backend = context.getBean(FailsOneRelease.class);
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			Lease read = template.acquire(this.name, "r", SHORT.mode(LockMode.READ));
			Lease permit = template.acquirePermit(this.name, "p", 2, SHORT);
			Lease lock = template.acquire(this.name, "x", SHORT);
			for (Lease lease : new Lease[] { read, permit, lock }) {
				assertThat(backend.forceRelease(lease.key(), null)).isTrue();
			}
			await().atMost(Duration.ofSeconds(5))
				.until(() -> !read.isValid() && !permit.isValid() && !lock.isValid());
			// The renewal thread marks a lease lost (invalid) first, then logs and counts it: awaited.
			for (String mode : new String[] { "read", "permit", "exclusive" }) {
				await().atMost(Duration.ofSeconds(5))
					.untilAsserted(() -> assertThat(
							meters.find(LockMetricsListener.LOST).tags("name", this.name, "mode", mode).counter())
						.as("lost " + mode)
						.isNotNull()
						.extracting(Counter::count)
						.isEqualTo(1.0));
			}
			read.close();
			permit.close();
			lock.close();
		});
	}

	@ParameterizedTest(name = "observations: {0}")
	@ValueSource(booleans = { false, true })
	void aPermitWhoseReleaseFailedIsCountedWithModePermit(boolean observations) {
		runner(observations).run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			template.acquirePermit(this.name, FailsOneRelease.FAILING, 2, LockOptions.defaults()).close();
			await().atMost(Duration.ofSeconds(5))
				.untilAsserted(() -> assertThat(meters.find(LockMetricsListener.RELEASE_FAILED)
					.tags("name", this.name)
					.counters()).singleElement().satisfies((counter) -> {
						assertThat(counter.getId().getTag("mode")).isEqualTo("permit");
						assertThat(counter.count()).isEqualTo(1);
					}));
		});
	}

	/** The memory backend, whose first release of a key with {@value #FAILING} in it fails. */
	static final class FailsOneRelease extends InMemoryLockBackend {

		static final String FAILING = "failing";

		private final AtomicBoolean failed = new AtomicBoolean();

		@Override
		public boolean release(String key, String owner) {
			fail(key);
			return super.release(key, owner);
		}

		@Override
		public CompletionStage<Boolean> releaseAsync(String key, String owner) {
			fail(key);
			return super.releaseAsync(key, owner);
		}

		private void fail(String key) {
			if (key.contains(FAILING) && this.failed.compareAndSet(false, true)) {
				throw new IllegalStateException("release failed on purpose");
			}
		}

	}

}
