package dev.holdfast.scheduling;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import org.junit.jupiter.api.TestInfo;

/**
 * The figures of a cluster scenario, one Markdown table row each, appended to
 * {@code target/tick-figures.md}: ticks due in the window, ticks run, duplicate runs, drops
 * (ticks due that ran nowhere) and the reasons instances gave for drops, runs per instance, and
 * the latest start after its tick (by the JVM's clock, which all backends of these tests share).
 */
final class TickFigures {

	static final Path FILE = Path.of("target", "tick-figures.md");

	static final String HEADER = "| backend | scenario | ticks due | ticks run | duplicates | drops | reasons given "
			+ "for drops | runs per instance | runs more than 0.5 s off their tick | latest start after its tick |\n"
			+ "|---|---|---|---|---|---|---|---|---|---|\n";

	private TickFigures() {
	}

	static Row row(String backend, String scenario, TickRecorder recorder, TickRecorder.Window window,
			Map<String, Duration> clocks) {
		Map<Instant, List<TickRecorder.Run>> byTick = recorder.byTick(window);
		long runs = byTick.values().stream().mapToLong(List::size).sum();
		Duration latest = byTick.values()
			.stream()
			.flatMap(List::stream)
			.map((run) -> Duration.between(run.tick(), run.at()))
			.max(Duration::compareTo)
			.orElse(Duration.ZERO);
		Map<String, Long> perInstance = new TreeMap<>();
		clocks.keySet().forEach((instance) -> perInstance.put(instance, 0L));
		byTick.values().stream().flatMap(List::stream).forEach((run) -> perInstance.merge(run.instance(), 1L, Long::sum));
		long others = recorder.runs()
			.stream()
			.filter((run) -> run.tick() != null && window.contains(run.at())
					&& Duration.between(run.tick(), run.at()).abs().compareTo(Duration.ofMillis(500)) > 0)
			.count();
		return new Row(backend, scenario, window.seconds(), byTick.size(), runs - byTick.size(),
				window.seconds() - byTick.size(), recorder.dropReasons(window), perInstance, others, latest);
	}

	static String delayRow(String backend, String scenario, List<TickRecorder.Run> runs, Duration shortestGap) {
		Map<String, Long> perInstance = runs.stream()
			.collect(Collectors.groupingBy(TickRecorder.Run::instance, TreeMap::new, Collectors.counting()));
		long first = runs.stream().mapToLong(TickRecorder.Run::startNanos).min().orElse(0);
		long last = runs.stream().mapToLong(TickRecorder.Run::startNanos).max().orElse(0);
		return "| " + backend + " | " + scenario + " | " + runs.size() + " runs over "
				+ Math.round((last - first) / 1e8) / 10.0 + " s | shortest time from the end of a run to the next start: " + shortestGap.toMillis()
				+ " ms | " + ((shortestGap.isNegative()) ? "overlapping runs" : "no overlap") + " | – | – | " + perInstance
				+ " | – | – |";
	}

	static void write(Class<?> test, TestInfo info, Object row) {
		try {
			if (!Files.exists(FILE)) {
				Files.writeString(FILE, HEADER, StandardCharsets.UTF_8, StandardOpenOption.CREATE);
			}
			Files.writeString(FILE, row + "\n", StandardCharsets.UTF_8, StandardOpenOption.APPEND);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	record Row(String backend, String scenario, long ticksDue, long ticksRun, long duplicates, long drops,
			Map<String, Long> reasons, Map<String, Long> perInstance, long otherTicks, Duration maxLateness) {

		@Override
		public String toString() {
			return "| " + this.backend + " | " + this.scenario + " | " + this.ticksDue + " | " + this.ticksRun + " | "
					+ this.duplicates + " | " + this.drops + " | " + (this.reasons.isEmpty() ? "–" : this.reasons)
					+ " | " + this.perInstance + " | " + this.otherTicks + " | " + this.maxLateness.toMillis() + " ms |";
		}

	}

}
