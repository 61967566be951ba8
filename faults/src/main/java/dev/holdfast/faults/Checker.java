package dev.holdfast.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

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
		return check(name, events);
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
				case "WR" -> {
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

}
