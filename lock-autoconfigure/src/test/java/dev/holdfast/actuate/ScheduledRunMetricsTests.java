package dev.holdfast.actuate;

import java.time.Duration;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;

import static org.awaitility.Awaitility.await;

/**
 * A {@code @SingleInstanceScheduled} run adds samples to the {@code holdfast.lock.acquire} and
 * {@code holdfast.lock.held} timers, whichever source records them (the observations, or
 * {@link LockMetricsListener} without an observation registry), as the README says.
 */
class ScheduledRunMetricsTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class))
		.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
		.withBean(Job.class)
		.withPropertyValues("holdfast.backend=memory");

	@Test
	void runIsTimedByTheObservations() {
		this.runner
			.withConfiguration(AutoConfigurations.of(ObservationAutoConfiguration.class, MetricsAutoConfiguration.class))
			.run((context) -> awaitSamples(context.getBean(MeterRegistry.class)));
	}

	@Test
	void runIsTimedByTheListenerWithoutObservations() {
		this.runner.run((context) -> awaitSamples(context.getBean(MeterRegistry.class)));
	}

	private static void awaitSamples(MeterRegistry meters) {
		await().atMost(Duration.ofSeconds(10)).until(() -> count(meters, LockMetricsListener.ACQUIRE) > 0
				&& count(meters, LockMetricsListener.HELD) > 0);
	}

	private static long count(MeterRegistry meters, String name) {
		return meters.find(name).tags("name", "metered-job", "backend", "memory").timers().stream()
			.mapToLong(Timer::count)
			.sum();
	}

	static class Job {

		@SingleInstanceScheduled(name = "metered-job", fixedDelay = "1h")
		void run() {
		}

	}

}
