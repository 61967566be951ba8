package dev.holdfast.scheduling;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.holdfast.LockListener;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs recorded by jobs of several instances in one JVM: (nominal tick, instance, when it
 * started), or for fixed-delay jobs (start and end on {@link System#nanoTime()}, instance); and
 * the ticks each instance skipped, with their reasons.
 */
final class TickRecorder {

	private final CopyOnWriteArrayList<Run> runs = new CopyOnWriteArrayList<>();

	private final CopyOnWriteArrayList<Skip> skips = new CopyOnWriteArrayList<>();

	void record(Instant tick, String instance) {
		this.runs.add(new Run(tick, instance, Instant.now(), System.nanoTime(), System.nanoTime()));
	}

	void record(long startNanos, long endNanos, String instance) {
		this.runs.add(new Run(null, instance, Instant.now(), startNanos, endNanos));
	}

	List<Run> runs() {
		return List.copyOf(this.runs);
	}

	/** A listener of one instance that records its skipped ticks of jobs {@code job}. */
	LockListener listener(String instance, String job) {
		return new LockListener() {
			@Override
			public void tickSkipped(String name, String backend, String reason) {
				if (name.equals(job)) {
					TickRecorder.this.skips.add(new Skip(instance, reason, Instant.now()));
				}
			}
		};
	}

	/** How many runs {@code instance} recorded, whatever their ticks. */
	long runsOf(String instance) {
		return this.runs.stream().filter((run) -> run.instance().equals(instance)).count();
	}

	/** Skips of {@code instance} by reason. */
	Map<String, Long> skips(String instance) {
		Map<String, Long> reasons = new TreeMap<>();
		this.skips.stream()
			.filter((skip) -> skip.instance().equals(instance))
			.forEach((skip) -> reasons.merge(skip.reason(), 1L, Long::sum));
		return reasons;
	}

	/** Skips for {@code reason} by any instance while the window's ticks were due. */
	long skipsInWindow(Window window, String reason) {
		return this.skips.stream()
			.filter((skip) -> skip.reason().equals(reason) && window.containsSkipAt(skip.at()))
			.count();
	}

	/** Skip reasons of the window, other than ran-elsewhere, over all instances. */
	Map<String, Long> dropReasons(Window window) {
		Map<String, Long> reasons = new TreeMap<>();
		this.skips.stream()
			.filter((skip) -> !skip.reason().equals("ran-elsewhere") && window.containsSkipAt(skip.at()))
			.forEach((skip) -> reasons.merge(skip.reason(), 1L, Long::sum));
		return reasons;
	}

	/** Runs by tick, for the ticks of the window. */
	Map<Instant, List<Run>> byTick(Window window) {
		Map<Instant, List<Run>> byTick = new TreeMap<>();
		for (Run run : this.runs) {
			if (run.tick() != null && window.contains(run.tick())) {
				byTick.computeIfAbsent(run.tick(), (tick) -> new ArrayList<>()).add(run);
			}
		}
		return byTick;
	}

	/** Ticks of the window that ran more than once on {@code instances}. */
	Map<Instant, List<String>> duplicates(Window window, List<String> instances) {
		Map<Instant, List<String>> duplicates = new HashMap<>();
		byTick(window).forEach((tick, runs) -> {
			List<String> on = runs.stream().map(Run::instance).filter(instances::contains).toList();
			if (on.size() > 1) {
				duplicates.put(tick, on);
			}
		});
		return duplicates;
	}

	/** The shortest time from the end of a run to the start of the next, by start. */
	Duration shortestGapBetweenRuns() {
		List<Run> sorted = new ArrayList<>(this.runs);
		sorted.sort(Comparator.comparingLong(Run::startNanos));
		assertThat(sorted).hasSizeGreaterThan(1);
		long shortest = Long.MAX_VALUE;
		for (int i = 1; i < sorted.size(); i++) {
			shortest = Math.min(shortest, sorted.get(i).startNanos() - sorted.get(i - 1).endNanos());
		}
		return Duration.ofNanos(shortest);
	}

	/**
	 * A run.
	 * @param tick its nominal tick, {@code null} for fixed-delay runs
	 * @param instance the instance that ran it
	 * @param at the wall clock (the JVM's, which the backends share) when it started
	 */
	record Run(Instant tick, String instance, Instant at, long startNanos, long endNanos) {

	}

	record Skip(String instance, String reason, Instant at) {

	}

	/** The ticks checked: from {@code from} (included) to {@code to} (excluded). */
	record Window(Instant from, Instant to) {

		boolean contains(Instant tick) {
			return !tick.isBefore(this.from) && tick.isBefore(this.to);
		}

		/** Whether a skip at {@code at} (real time) decided a tick of the window. */
		boolean containsSkipAt(Instant at) {
			return !at.isBefore(this.from.minusMillis(500)) && at.isBefore(this.to.plusMillis(500));
		}

		long seconds() {
			return Duration.between(this.from, this.to).toSeconds();
		}

	}

}
