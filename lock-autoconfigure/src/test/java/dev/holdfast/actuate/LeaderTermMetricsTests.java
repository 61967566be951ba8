package dev.holdfast.actuate;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import io.micrometer.common.KeyValue;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.context.LifecycleAutoConfiguration;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.LeaderElections;
import dev.holdfast.Leadership;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastLeaderAutoConfiguration;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The counters of terms and revocations, and the Observation of each term, fed by the leadership
 * application events of a real context on the memory backend (whose lock observations, of the
 * terms' leases, the recording handler leaves out).
 */
class LeaderTermMetricsTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, HoldfastAutoConfiguration.class,
				HoldfastLeaderAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class))
		.withBean(InMemoryLockBackend.class);

	private final String group = "group-" + UUID.randomUUID();

	@Test
	void everyTermIsCountedAndEveryRevocationCountedByItsReason() {
		this.runner.withBean(SimpleMeterRegistry.class).run((context) -> {
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			Leadership leadership = join(context.getBean(LeaderElections.class), context);
			assertThat(leadership.awaitLeadership(Duration.ofSeconds(5))).isPresent();
			leadership.yield();
			// The yielder waits a second before it campaigns again, then leads (no other instance).
			assertThat(leadership.awaitLeadership(Duration.ofSeconds(5))).isPresent();
			leadership.close();
			await().atMost(Duration.ofSeconds(2))
				.untilAsserted(() -> assertThat(revocations(meters, "shutdown")).isEqualTo(1));
			assertThat(meters.get(LeaderTermMetrics.TERMS).tag("group", this.group).tag("backend", "memory")
				.counter()
				.count()).isEqualTo(2);
			assertThat(revocations(meters, "yielded")).isEqualTo(1);
		});
	}

	@Test
	void eachTermIsAnObservationFromItsGrantToItsRevocationWithTheReason() {
		List<Observation.Context> started = new CopyOnWriteArrayList<>();
		List<Observation.Context> stopped = new CopyOnWriteArrayList<>();
		ObservationRegistry observations = ObservationRegistry.create();
		observations.observationConfig().observationHandler(new ObservationHandler<>() {

			@Override
			public void onStart(Observation.Context observed) {
				if (LeaderTermObservations.TERM.equals(observed.getName())) {
					started.add(observed);
				}
			}

			@Override
			public void onStop(Observation.Context observed) {
				if (LeaderTermObservations.TERM.equals(observed.getName())) {
					stopped.add(observed);
				}
			}

			@Override
			public boolean supportsContext(Observation.Context observed) {
				return true;
			}

		});
		this.runner.withBean(ObservationRegistry.class, () -> observations).run((context) -> {
			Leadership leadership = join(context.getBean(LeaderElections.class), context);
			long token = leadership.awaitLeadership(Duration.ofSeconds(5)).orElseThrow().fencingToken();
			await().atMost(Duration.ofSeconds(2)).until(() -> !started.isEmpty());
			Observation.Context term = started.get(0);
			assertThat(term.getLowCardinalityKeyValues()).contains(KeyValue.of("group", this.group),
					KeyValue.of("backend", "memory"));
			assertThat(term.getHighCardinalityKeyValues()).contains(KeyValue.of("fencing.token", Long.toString(token)));
			assertThat(stopped).as("while the term lasts").isEmpty();
			leadership.yield();
			await().atMost(Duration.ofSeconds(2)).until(() -> !stopped.isEmpty());
			assertThat(stopped).containsExactly(term);
			assertThat(term.getLowCardinalityKeyValues()).contains(KeyValue.of("reason", "yielded"));
		});
	}

	private double revocations(MeterRegistry meters, String reason) {
		var counter = meters.find(LeaderTermMetrics.REVOCATIONS)
			.tag("group", this.group)
			.tag("backend", "memory")
			.tag("reason", reason)
			.counter();
		return (counter != null) ? counter.count() : 0;
	}

	private Leadership join(LeaderElections elections,
			org.springframework.context.ConfigurableApplicationContext context) {
		Leadership leadership = elections.join(this.group);
		context.publishEvent(new ApplicationReadyEvent(new SpringApplication(), new String[0], context, Duration.ZERO));
		return leadership;
	}

}
