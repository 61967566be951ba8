package dev.holdfast.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Reads the event logs of one run (client logs and the controller's) and reports what happened to
 * the guarantees. All timestamps are {@link System#nanoTime()} of processes on one host, so they
 * are comparable across processes.
 * <ul>
 * <li><b>Overlapping holders</b>: pairs of hold intervals {@code [ACQ, REL]} of different
 * processes that intersect. A client logs {@code ACQ} after the backend granted the lock and
 * {@code REL} before it sends the release, so a logged interval lies inside the time the backend
 * counted it as the holder and an overlap is never an artefact of logging.</li>
 * <li><b>Token regressions</b>: acquisitions whose fencing token is not larger than every token
 * acquired before them.</li>
 * <li><b>Lost updates</b>, per counter: writes the resource accepted minus the counter's final
 * value.</li>
 * <li><b>Stale writes</b>, per counter: writes carrying a token lower than one the resource had
 * already seen, accepted (plain counter) or rejected (fenced counter).</li>
 * <li><b>Longest unavailability</b>: the longest time between two successive acquisitions (or
 * between the last one and the end of the run) while clients were looping to acquire.</li>
 * <li><b>Recovery</b>: from each {@code HEAL} of the controller to the next acquisition.</li>
 * </ul>
 * {@link #checkTicks(String, Path, Duration, Duration)} reads the scheduled-ticks workload of
 * {@link BootFaultClient}: ticks run twice (by two instances, or by one), ticks of the run
 * window that no instance ran, runs of the job on two instances at once, and the tick counters'
 * writes.
 */
public final class Checker {

	private Checker() {
	}

	/** One parsed event line: {@code <nanoTime> <pid> <TYPE> [fields...]}. */
	record Event(long nanos, long pid, String type, String[] fields) {

		static Event parse(String line) {
			String[] parts = line.trim().split(" ");
			String[] fields = new String[parts.length - 3];
			System.arraycopy(parts, 3, fields, 0, fields.length);
			return new Event(Long.parseLong(parts[0]), Long.parseLong(parts[1]), parts[2], fields);
		}

	}

	/** Per-counter outcome of the workload's writes. */
	public record Writes(int accepted, int staleAccepted, int rejected, long finalValue) {

		public long lostUpdates() {
			return Math.max(0, this.accepted - this.finalValue);
		}

	}

	/** The result of one run. */
	public record Report(String name, int acquisitions, int overlaps, double maxOverlapMs, int tokenRegressions,
			int lostLeases, int errors, Writes plain, Writes fenced, double longestGapMs, double recoveryMs) {

		/** Whether some safety property was violated: overlap, token regression, lost or stale update. */
		public boolean plainViolations() {
			return this.overlaps > 0 || this.plain.staleAccepted() > 0 || this.plain.lostUpdates() > 0;
		}

	}

	/** Reads every {@code *.log} file in {@code dir} and checks them. */
	public static Report check(String name, Path dir) throws IOException {
		return check(name, read(dir));
	}

	/** Every event of the {@code *.log} files in {@code dir}, unsorted. */
	static List<Event> read(Path dir) throws IOException {
		List<Event> events = new ArrayList<>();
		try (var files = Files.list(dir)) {
			for (Path file : files.filter((f) -> f.toString().endsWith(".log")).toList()) {
				for (String line : Files.readAllLines(file)) {
					if (!line.isBlank()) {
						events.add(Event.parse(line));
					}
				}
			}
		}
		return events;
	}

	static Report check(String name, List<Event> unsorted) {
		List<Event> events = new ArrayList<>(unsorted);
		events.sort(Comparator.comparingLong(Event::nanos));
		// Hold intervals: from ACQ to the same process's next REL or ERR (or its last event).
		record Hold(long pid, long start, long end) {
		}
		List<Hold> holds = new ArrayList<>();
		Map<Long, Long> open = new HashMap<>();
		Map<Long, Long> lastEvent = new HashMap<>();
		List<Long> acquisitions = new ArrayList<>();
		long maxToken = Long.MIN_VALUE;
		int regressions = 0;
		int lostLeases = 0;
		int errors = 0;
		int[] plain = new int[3];
		int[] fenced = new int[3];
		long plainFinal = 0;
		long fencedFinal = 0;
		long end = Long.MIN_VALUE;
		List<Long> heals = new ArrayList<>();
		for (Event event : events) {
			lastEvent.put(event.pid(), event.nanos());
			switch (event.type()) {
				case "ACQ" -> {
					Long previous = open.put(event.pid(), event.nanos());
					if (previous != null) {
						holds.add(new Hold(event.pid(), previous, event.nanos()));
					}
					acquisitions.add(event.nanos());
					long token = Long.parseLong(event.fields()[0]);
					if (token <= maxToken) {
						regressions++;
					}
					maxToken = Math.max(maxToken, token);
				}
				case "REL", "ERR" -> {
					Long start = open.remove(event.pid());
					if (start != null) {
						holds.add(new Hold(event.pid(), start, event.nanos()));
					}
					if (event.type().equals("REL") && "lost".equals(event.fields()[1])) {
						lostLeases++;
					}
					if (event.type().equals("ERR")) {
						errors++;
					}
				}
				case "WR" -> countWrite(event, plain, fenced);
				case "HEAL" -> heals.add(event.nanos());
				case "FINAL" -> {
					long value = Long.parseLong(event.fields()[1]);
					if (event.fields()[0].equals("plain")) {
						plainFinal = value;
					}
					else {
						fencedFinal = value;
					}
				}
				case "STOP" -> end = Math.max(end, event.nanos());
				default -> {
				}
			}
		}
		for (Map.Entry<Long, Long> entry : open.entrySet()) {
			holds.add(new Hold(entry.getKey(), entry.getValue(), lastEvent.get(entry.getKey())));
		}
		holds.sort(Comparator.comparingLong(Hold::start));
		int overlaps = 0;
		long maxOverlap = 0;
		for (int i = 0; i < holds.size(); i++) {
			Hold a = holds.get(i);
			for (int j = i + 1; j < holds.size() && holds.get(j).start() < a.end(); j++) {
				Hold b = holds.get(j);
				if (b.pid() != a.pid()) {
					overlaps++;
					maxOverlap = Math.max(maxOverlap, Math.min(a.end(), b.end()) - b.start());
				}
			}
		}
		long longestGap = 0;
		for (int i = 1; i < acquisitions.size(); i++) {
			longestGap = Math.max(longestGap, acquisitions.get(i) - acquisitions.get(i - 1));
		}
		if (!acquisitions.isEmpty() && end != Long.MIN_VALUE) {
			longestGap = Math.max(longestGap, end - acquisitions.get(acquisitions.size() - 1));
		}
		double recovery = 0;
		for (long heal : heals) {
			long next = acquisitions.stream().filter((t) -> t >= heal).findFirst().orElse(end);
			recovery = Math.max(recovery, (next - heal) / 1e6);
		}
		return new Report(name, acquisitions.size(), overlaps, maxOverlap / 1e6, regressions, lostLeases, errors,
				new Writes(plain[0], plain[1], plain[2], plainFinal),
				new Writes(fenced[0], fenced[1], fenced[2], fencedFinal), longestGap / 1e6, recovery);
	}

	/** Counts a write event in {@code plain} or {@code fenced}: accepted, stale accepted, rejected. */
	private static void countWrite(Event event, int[] plain, int[] fenced) {
		int[] counts = event.fields()[0].equals("plain") ? plain : fenced;
		switch (event.fields()[3]) {
			case "ok" -> counts[0]++;
			case "stale" -> {
				counts[0]++;
				counts[1]++;
			}
			default -> counts[2]++;
		}
	}

	/** A Markdown table of reports, one row each. */
	public static String table(List<Report> reports) {
		StringBuilder out = new StringBuilder();
		out.append("| run | acq | overlapping holders (max ms) | token regressions | lost leases "
				+ "| plain: lost updates / stale accepted | fenced: lost updates / stale accepted / rejected "
				+ "| longest unavailability ms | recovery ms | errors |\n");
		out.append("|---|---|---|---|---|---|---|---|---|---|\n");
		for (Report r : reports) {
			out.append(String.format(Locale.ROOT, "| %s | %d | %d (%.0f) | %d | %d | %d / %d | %d / %d / %d | %.0f | %.0f | %d |%n",
					r.name(), r.acquisitions(), r.overlaps(), r.maxOverlapMs(), r.tokenRegressions(), r.lostLeases(),
					r.plain().lostUpdates(), r.plain().staleAccepted(), r.fenced().lostUpdates(),
					r.fenced().staleAccepted(), r.fenced().rejected(), r.longestGapMs(), r.recoveryMs(),
					r.errors()));
		}
		return out.toString();
	}

	/**
	 * The outcome of the tick workload ({@link BootFaultClient}) in one run. Ticks are named by
	 * their nominal fire time (epoch milliseconds), the same on every instance.
	 *
	 * @param name the run
	 * @param expected ticks due in the run window: the multiples of the period after the window
	 * opened and at least one period before it closed
	 * @param ran distinct ticks that some instance ran, in or out of the window
	 * @param duplicates runs of a tick beyond its first, by any instance
	 * @param missed expected ticks that no instance ran, outside the allowance around faults
	 * @param missedInFaults expected ticks that no instance ran, from a {@code FAULT} to its
	 * {@code HEAL} plus the allowance
	 * @param longestMissStreak most consecutive expected ticks that no instance ran
	 * @param instances instances that ran at least one tick
	 * @param concurrentRuns runs that started while another instance was still running the job
	 * @param recoveryMs longest time from a {@code HEAL} to the next run of the job
	 * @param errors runs that failed
	 * @param plain the tick counter written without the guard
	 * @param fenced the tick counter written through the guard, with the tick as the token
	 * @param slowestStartupMs the slowest instance's startup, from its JVM's start to ready
	 */
	public record TickReport(String name, int expected, int ran, int duplicates, int missed, int missedInFaults,
			int longestMissStreak, int instances, int concurrentRuns, double recoveryMs, int errors, Writes plain,
			Writes fenced, long slowestStartupMs) {

		/** Whether a tick ran twice, or an expected tick outside the allowance around faults ran nowhere. */
		public boolean violations() {
			return this.duplicates > 0 || this.missed > 0;
		}

	}

	/**
	 * Reads every {@code *.log} file in {@code dir} and checks the ticks.
	 * @param period the job's period: its ticks are the multiples of it since the epoch
	 * @param allowance how long after a fault heals missed ticks are expected, and counted apart
	 */
	public static TickReport checkTicks(String name, Path dir, Duration period, Duration allowance)
			throws IOException {
		return checkTicks(name, read(dir), period.toMillis(), allowance.toMillis());
	}

	static TickReport checkTicks(String name, List<Event> unsorted, long periodMs, long allowanceMs) {
		List<Event> events = new ArrayList<>(unsorted);
		events.sort(Comparator.comparingLong(Event::nanos));
		Map<Long, Long> lastEvent = new HashMap<>();
		events.forEach((event) -> lastEvent.put(event.pid(), event.nanos()));
		Map<Long, Integer> runs = new HashMap<>();
		Set<Long> instances = new HashSet<>();
		// Instances inside a run, with its start; a run that never ended ends with its instance's last event.
		Map<Long, Long> running = new HashMap<>();
		List<Long> starts = new ArrayList<>();
		List<Long> faults = new ArrayList<>();
		List<Long> heals = new ArrayList<>();
		long windowNanos = 0;
		Long windowStart = null;
		Long windowEnd = null;
		int concurrent = 0;
		int errors = 0;
		int[] plain = new int[3];
		int[] fenced = new int[3];
		long[] finals = new long[2];
		long slowestStartup = 0;
		for (Event event : events) {
			switch (event.type()) {
				case "TICK" -> {
					runs.merge(Long.parseLong(event.fields()[0]), 1, Integer::sum);
					instances.add(event.pid());
					starts.add(event.nanos());
					running.keySet().removeIf((pid) -> lastEvent.get(pid) < event.nanos());
					if (running.keySet().stream().anyMatch((pid) -> pid != event.pid())) {
						concurrent++;
					}
					running.put(event.pid(), event.nanos());
				}
				case "TEND" -> {
					running.remove(event.pid());
					if (!"ok".equals(event.fields()[1])) {
						errors++;
					}
				}
				case "TWR" -> countWrite(event, plain, fenced);
				case "TFINAL" -> finals[event.fields()[0].equals("plain") ? 0 : 1] = Long.parseLong(event.fields()[1]);
				case "WINDOW" -> {
					if (event.fields()[0].equals("start")) {
						windowNanos = event.nanos();
						windowStart = Long.parseLong(event.fields()[1]);
					}
					else {
						windowEnd = Long.parseLong(event.fields()[1]);
					}
				}
				case "FAULT" -> faults.add(event.nanos());
				case "HEAL" -> heals.add(event.nanos());
				case "READY" -> slowestStartup = Math.max(slowestStartup, Long.parseLong(event.fields()[0]));
				default -> {
				}
			}
		}
		if (windowStart == null || windowEnd == null) {
			throw new IllegalArgumentException("Run '" + name + "' has no 'WINDOW start' and 'WINDOW end' in its "
					+ "controller log: the expected ticks are unknown");
		}
		// Excluded from "missed": each fault until its heal plus the allowance, on the wall clock.
		List<long[]> excluded = new ArrayList<>();
		for (int i = 0; i < faults.size(); i++) {
			long end = (i < heals.size()) ? epochMillis(heals.get(i), windowNanos, windowStart) + allowanceMs
					: windowEnd;
			excluded.add(new long[] { epochMillis(faults.get(i), windowNanos, windowStart), end });
		}
		int expected = 0;
		int missed = 0;
		int missedInFaults = 0;
		int streak = 0;
		int longestStreak = 0;
		for (long tick = (windowStart / periodMs + 1) * periodMs; tick <= windowEnd - periodMs; tick += periodMs) {
			expected++;
			if (runs.containsKey(tick)) {
				streak = 0;
				continue;
			}
			longestStreak = Math.max(longestStreak, ++streak);
			long nominal = tick;
			if (excluded.stream().anyMatch((range) -> range[0] <= nominal && nominal <= range[1])) {
				missedInFaults++;
			}
			else {
				missed++;
			}
		}
		int duplicates = runs.values().stream().mapToInt((count) -> count - 1).sum();
		double recovery = 0;
		long last = events.get(events.size() - 1).nanos();
		for (long heal : heals) {
			long next = starts.stream().filter((start) -> start >= heal).findFirst().orElse(last);
			recovery = Math.max(recovery, (next - heal) / 1e6);
		}
		return new TickReport(name, expected, runs.size(), duplicates, missed, missedInFaults, longestStreak,
				instances.size(), concurrent, recovery, errors, new Writes(plain[0], plain[1], plain[2], finals[0]),
				new Writes(fenced[0], fenced[1], fenced[2], finals[1]), slowestStartup);
	}

	/** {@code nanos} on the controller's wall clock, from the pair of stamps of {@code WINDOW start}. */
	private static long epochMillis(long nanos, long windowNanos, long windowStart) {
		return windowStart + (nanos - windowNanos) / 1_000_000;
	}

	/** A Markdown table of tick reports, one row each. */
	public static String tickTable(List<TickReport> reports) {
		String header = "| run | ticks expected / ran | duplicate runs | missed (in fault allowance) "
				+ "| longest miss streak | instances ticking | concurrent runs | plain: lost updates / stale accepted "
				+ "| fenced: lost updates / stale accepted / rejected | recovery ms | errors | slowest startup ms |\n"
				+ "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
		return header + reports.stream()
			.map((r) -> String.format(Locale.ROOT,
					"| %s | %d / %d | %d | %d (%d) | %d | %d | %d | %d / %d | %d / %d / %d | %.0f | %d | %d |%n", r.name(),
					r.expected(), r.ran(), r.duplicates(), r.missed(), r.missedInFaults(), r.longestMissStreak(),
					r.instances(), r.concurrentRuns(), r.plain().lostUpdates(), r.plain().staleAccepted(),
					r.fenced().lostUpdates(), r.fenced().staleAccepted(), r.fenced().rejected(), r.recoveryMs(),
					r.errors(), r.slowestStartupMs()))
			.collect(Collectors.joining());
	}

}
