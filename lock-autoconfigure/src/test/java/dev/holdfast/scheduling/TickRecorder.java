package dev.holdfast.scheduling;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs recorded by jobs of several instances: (nominal tick, instance).
 */
final class TickRecorder {

	private final CopyOnWriteArrayList<Run> runs = new CopyOnWriteArrayList<>();

	void record(Instant tick, String instance) {
		this.runs.add(new Run(tick, instance));
	}

	List<Run> runs() {
		return List.copyOf(this.runs);
	}

	/**
	 * Asserts that no tick ran twice, and that every second from the first recorded tick at or
	 * after {@code from} to the last ran, at least {@code minimum} of them. Ticks before
	 * {@code from} may be missing: while instances start, one instance alone may skip ticks
	 * because its first, slow run ended after the next tick (as with {@code @Scheduled}).
	 */
	static void assertEachTickExactlyOnce(List<Run> runs, Instant from, int minimum) {
		Map<Instant, List<String>> byTick = new TreeMap<>();
		for (Run run : runs) {
			byTick.computeIfAbsent(run.tick(), (tick) -> new ArrayList<>()).add(run.instance());
		}
		Map<Instant, List<String>> duplicates = new HashMap<>();
		byTick.forEach((tick, instances) -> {
			if (instances.size() > 1) {
				duplicates.put(tick, instances);
			}
		});
		assertThat(duplicates).as("ticks that ran more than once, of %s", byTick).isEmpty();
		byTick.keySet().removeIf((tick) -> tick.isBefore(from));
		assertThat(byTick).hasSizeGreaterThanOrEqualTo(minimum);
		List<Instant> ticks = new ArrayList<>(byTick.keySet());
		Instant first = ticks.get(0);
		Instant last = ticks.get(ticks.size() - 1);
		long expected = Duration.between(first, last).toSeconds() + 1;
		assertThat(ticks).as("ticks between %s and %s, of %s", first, last, byTick).hasSize((int) expected);
	}

	record Run(Instant tick, String instance) {

	}

}
