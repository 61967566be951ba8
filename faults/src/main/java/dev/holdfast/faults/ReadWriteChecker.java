package dev.holdfast.faults;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Checks a read-write fault run: the logs of its {@link ReadWriteFaultClient}s (stamps of the host's
 * monotonic clock, comparable across processes) and the {@link ReadWriteResource}'s history, in the
 * resource's own order. What the rules promise (DESIGN.md, Read-write locks), and what is counted:
 * <ul>
 * <li><b>Stale writes accepted</b> (the fence): an accepted write whose token is below one the
 * resource accepted before. The guard refuses them; the count shows it did.</li>
 * <li><b>Lost updates</b>: an accepted write whose value is not the previous accepted value plus
 * one (its read-modify-write missed another's write).</li>
 * <li><b>Reads of later writes</b> (RWL-11, 22, 35, 43: latest write's token ≤ T): a read valid
 * under its lease (token T) that saw a value written with a token above T.</li>
 * <li><b>Writes not above an earlier read</b> (T &lt; every later write's token): a write hold,
 * valid from its grant to a later stamp, whose grant was logged after a valid read with a token at
 * least its own.</li>
 * <li><b>Overlapping holds</b>: a write hold and another hold (read or write, any thread) both
 * valid at once. A hold counts from its grant to the last stamp at which its lease was still
 * valid, so a paused or killed holder counts only up to what it saw of its own validity.</li>
 * <li><b>Refused while valid</b>: an operation the fence refused though its lease was still valid
 * after it: a larger token had reached the resource while this hold was valid.</li>
 * </ul>
 * Not promised, counted apart (late writes accepted): that a holder whose lease ended writes
 * nothing. Its late write is refused exactly when a larger token reached the resource first (a later writer's
 * read, or a reader's read with a token above its own: JDBC and ZooKeeper readers have one; a Redis
 * reader's token may equal the latest write's, RWL-22).
 */
final class ReadWriteChecker {

	private ReadWriteChecker() {
	}

	/** The outcome of one run. */
	record Report(String name, int reads, int acceptedWrites, int refused, long finalValue, int staleAccepted,
			int lostUpdates, int readsOfLaterWrites, int writesNotAboveEarlierReads, int overlaps,
			double maxOverlapMs, int refusedWhileValid, int lateWritesAccepted, int errors) {

		/** Whether a guarantee was broken. */
		boolean violations() {
			return this.staleAccepted + this.lostUpdates + this.readsOfLaterWrites + this.writesNotAboveEarlierReads
					+ this.overlaps + this.refusedWhileValid > 0;
		}

	}

	/** A hold of one thread: valid from {@code start} (its grant's stamp) to {@code end}. */
	private record Hold(String holder, boolean write, long token, long start, long end) {
	}

	private record Read(long nanos, long token) {
	}

	static Report check(String name, List<Checker.Event> unsorted, List<String> history) {
		List<Checker.Event> events = new ArrayList<>(unsorted);
		events.sort(Comparator.comparingLong(Checker.Event::nanos));
		Map<String, Hold> open = new HashMap<>();
		List<Hold> holds = new ArrayList<>();
		List<Read> validReads = new ArrayList<>();
		int reads = 0;
		int readsOfLaterWrites = 0;
		int refusedWhileValid = 0;
		int late = 0;
		int errors = 0;
		for (Checker.Event event : events) {
			String[] f = event.fields();
			String holder = (f.length > 0) ? event.pid() + "/" + f[0] : "";
			boolean valid = f.length > 0 && f[f.length - 1].equals("valid");
			switch (event.type()) {
				case "WACQ", "RACQ" -> {
					close(open.remove(holder), holds);
					open.put(holder, new Hold(holder, event.type().equals("WACQ"), Long.parseLong(f[1]),
							event.nanos(), Long.MIN_VALUE));
				}
				case "RD", "WR", "RREL", "WREL" -> {
					Hold hold = open.get(holder);
					if (valid && hold != null) {
						open.put(holder, new Hold(holder, hold.write(), hold.token(), hold.start(), event.nanos()));
					}
					if (valid && Arrays.asList(f).contains("rejected")) {
						refusedWhileValid++;
					}
					if (event.type().equals("WR") && f[3].equals("ok") && !valid) {
						late++;
					}
					if (event.type().equals("RD")) {
						reads++;
						if (valid && f[4].equals("ok")) {
							long token = Long.parseLong(f[1]);
							validReads.add(new Read(event.nanos(), token));
							if (Long.parseLong(f[3]) > token) {
								readsOfLaterWrites++;
							}
						}
					}
					if (event.type().endsWith("REL")) {
						close(open.remove(holder), holds);
					}
				}
				case "ERR" -> {
					errors++;
					close(open.remove(holder), holds);
				}
				default -> {
				}
			}
		}
		open.values().forEach((hold) -> close(hold, holds));
		holds.sort(Comparator.comparingLong(Hold::start));
		int overlaps = 0;
		long maxOverlap = 0;
		for (int i = 0; i < holds.size(); i++) {
			Hold a = holds.get(i);
			for (int j = i + 1; j < holds.size() && holds.get(j).start() < a.end(); j++) {
				Hold b = holds.get(j);
				if ((a.write() || b.write()) && !a.holder().equals(b.holder())) {
					overlaps++;
					maxOverlap = Math.max(maxOverlap, Math.min(a.end(), b.end()) - b.start());
				}
			}
		}
		int writesNotAbove = 0;
		int next = 0;
		long maxReadToken = Long.MIN_VALUE;
		for (Hold hold : holds) {
			while (next < validReads.size() && validReads.get(next).nanos() < hold.start()) {
				maxReadToken = Math.max(maxReadToken, validReads.get(next++).token());
			}
			if (hold.write() && hold.token() <= maxReadToken) {
				writesNotAbove++;
			}
		}
		int[] fence = fence(history);
		return new Report(name, reads, fence[0], fence[1], fence[2], fence[3], fence[4], readsOfLaterWrites,
				writesNotAbove, overlaps, maxOverlap / 1e6, refusedWhileValid, late, errors);
	}

	/** A hold with a valid stamp after its grant; one without (lost at once, or killed before) proves nothing. */
	private static void close(Hold hold, List<Hold> holds) {
		if (hold != null && hold.end() != Long.MIN_VALUE) {
			holds.add(hold);
		}
	}

	/**
	 * The resource's history: accepted writes, refused operations, the final value, stale writes
	 * accepted, lost updates.
	 */
	private static int[] fence(List<String> history) {
		int accepted = 0;
		int refused = 0;
		int stale = 0;
		int lost = 0;
		long highest = Long.MIN_VALUE;
		long value = 0;
		for (String entry : history) {
			String[] f = entry.split(" ");
			long token = Long.parseLong(f[1]);
			if (f[f.length - 1].equals("rejected")) {
				refused++;
				continue;
			}
			if (f[0].equals("w")) {
				accepted++;
				if (token < highest) {
					stale++;
				}
				long written = Long.parseLong(f[2]);
				if (written != value + 1) {
					lost++;
				}
				value = written;
			}
			highest = Math.max(highest, token);
		}
		return new int[] { accepted, refused, (int) value, stale, lost };
	}

	/** A Markdown table of reports, one row each. */
	static String table(List<Report> reports) {
		StringBuilder out = new StringBuilder("| run | reads | writes accepted / refused | final value "
				+ "| stale writes accepted | lost updates | reads of later writes | writes not above an earlier read "
				+ "| overlapping holds (max ms) | refused while valid | late writes accepted | errors |\n");
		out.append("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
		for (Report r : reports) {
			out.append(String.format(Locale.ROOT, "| %s | %d | %d / %d | %d | %d | %d | %d | %d | %d (%.0f) | %d | %d | %d |%n",
					r.name(), r.reads(), r.acceptedWrites(), r.refused(), r.finalValue(), r.staleAccepted(),
					r.lostUpdates(), r.readsOfLaterWrites(), r.writesNotAboveEarlierReads(), r.overlaps(),
					r.maxOverlapMs(), r.refusedWhileValid(), r.lateWritesAccepted(), r.errors()));
		}
		return out.toString();
	}

}
