package dev.holdfast.bench;

import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The Markdown table of one run, with ratios to the floors of the same run and the targets. */
final class Report {

	private final boolean quick;

	private final Map<String, Map<Integer, double[]>> throughput;

	private final Map<String, double[]> annotation;

	private final Map<String, Double> annotationCpu;

	private final List<ContendedHarness.Result> contended;

	private final List<ContendedHarness.Result> tryBusy;

	private final List<HeldLeasesHarness.Result> leases;

	private final List<String> notes;

	private final Provenance provenance;

	private final String command = Provenance.command();

	private final Duration took;

	private final StringBuilder out = new StringBuilder();

	private static final String CPU_NOTE = "Server µs/op: CPU time (user + system, /proc/<pid>/stat) of the "
			+ "contender's servers during the measurement, per operation: the redis-server; all PostgreSQL processes; "
			+ "the five Redlock redis-servers; the ZooKeeper server's threads. Client µs/op: CPU of the process that runs "
			+ "the clients, per operation. Both in 10 ms ticks, summed over the measurement.";

	Report(boolean quick, Map<String, Map<Integer, double[]>> throughput, Map<String, double[]> annotation,
			Map<String, Double> annotationCpu, List<ContendedHarness.Result> contended,
			List<ContendedHarness.Result> tryBusy, List<HeldLeasesHarness.Result> leases, List<String> notes,
			Provenance provenance, Duration took) {
		this.quick = quick;
		this.throughput = throughput;
		this.annotation = annotation;
		this.annotationCpu = annotationCpu;
		this.contended = contended;
		this.tryBusy = tryBusy;
		this.leases = leases;
		this.notes = notes;
		this.provenance = provenance;
		this.took = took;
	}

	String render() {
		line("## Run of " + Main.now());
		line("");
		line("- Machine: " + Runtime.getRuntime().availableProcessors() + " CPUs (nproc), "
				+ Runtime.getRuntime().maxMemory() / (1024 * 1024) + " MiB max heap in the runner; JDK "
				+ System.getProperty("java.vm.version") + " (" + System.getProperty("java.vm.name") + ")");
		line("- Mode: " + (this.quick ? "quick (1 warmup + 2 measurement iterations of 1 s, 1 fork)"
				: "full (5 warmup + 5 measurement iterations of 1 s, 1 fork)")
				+ "; each uncontended trial first runs until the JIT compiler is quiet (at most "
				+ (this.quick ? 5 : 20) + " s); run took "
				+ this.took.toMinutes() + " min " + this.took.toSecondsPart() + " s");
		line("- Command: `" + this.command + "`");
		for (String note : this.notes) {
			line("- " + note);
		}
		line("");
		uncontended();
		annotationOverhead();
		contendedTable();
		tryBusyTable();
		leasesTable();
		targets();
		return this.out.toString();
	}

	private void uncontended() {
		if (this.throughput.isEmpty()) {
			return;
		}
		line("### Uncontended acquire + release, ops/s over all threads (higher is better)");
		line("");
		line("Each thread locks and unlocks a key of its own. Ratios are to the floor of the same backend "
				+ "(Redlock: to the single-node Redis floor).");
		line("");
		line("Mean of the measurement iterations, its ratio to the floor's mean, the ratio of the best "
				+ "iterations (least disturbed by other load), and bytes allocated per operation.");
		line("");
		line(CPU_NOTE + " Redlock's server: the five nodes. Client: the JMH fork's JVM.");
		line("");
		line("| contender | 1 thread, ops/s | × floor | best × floor | B/op | server µs/op | client µs/op "
				+ "| 8 threads, ops/s | × floor | best × floor | B/op | server µs/op | client µs/op |");
		line("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
		for (Map.Entry<String, Map<Integer, double[]>> entry : this.throughput.entrySet()) {
			String contender = entry.getKey();
			StringBuilder row = new StringBuilder("| " + contender + " |");
			for (int threads : new int[] { 1, 8 }) {
				double[] score = entry.getValue().get(threads);
				double[] floor = scores(floorOf(contender), threads);
				if (score == null) {
					row.append(" – | – | – | – | – | – |");
				}
				else {
					String error = Double.isNaN(score[1]) ? "" : String.format(Locale.ROOT, " ± %,.0f", score[1]);
					row.append(String.format(Locale.ROOT, " %,.0f%s | %s | %s | %,.0f | %s | %s |", score[0], error,
							ratio(score[0], (floor != null) ? floor[0] : Double.NaN),
							ratio(score[2], (floor != null) ? floor[2] : Double.NaN), score[3],
							micros((score.length > 4) ? score[4] : Double.NaN),
							micros((score.length > 5) ? score[5] : Double.NaN)));
				}
			}
			line(row.toString());
		}
		line("");
		provenance("redis", "jdbc", "redlock", "zookeeper");
	}

	private void annotationOverhead() {
		if (this.annotation.isEmpty()) {
			return;
		}
		line("### @DistributedLock over LockTemplate, memory backend, ns per call (lower is better)");
		line("");
		line("Mean and best iteration (least disturbed by other load); allocation per call is exact.");
		line("");
		line("| call | LockTemplate mean / best | @DistributedLock mean / best | overhead, mean / best | B/call, template / proxy |");
		line("|---|---:|---:|---:|---:|");
		annotationRow("fixed name", "template", "annotation");
		annotationRow("name + SpEL key `#key`", "templateWithKey", "annotationWithKey");
		line("");
		if (!this.annotationCpu.isEmpty()) {
			line("The same calls in CPU time of the calling thread (best of several rounds of 100,000 calls), "
					+ "which the time a loaded machine keeps the thread waiting does not inflate:");
			line("");
			line("| call | LockTemplate | @DistributedLock proxy | overhead |");
			line("|---|---:|---:|---:|");
			cpuRow("fixed name", "template", "annotation");
			cpuRow("name + SpEL key `#key`", "templateWithKey", "annotationWithKey");
			line("");
		}
		provenance("annotation");
	}

	private void annotationRow(String label, String template, String annotated) {
		double[] t = this.annotation.get(template);
		double[] a = this.annotation.get(annotated);
		if (t == null || a == null) {
			line("| " + label + " | – | – | – | – |");
			return;
		}
		line(String.format(Locale.ROOT, "| %s | %,.0f / %,.0f ns | %,.0f / %,.0f ns | %.2f / %.2f µs | %,.0f / %,.0f |", label,
				t[0], t[1], a[0], a[1], (a[0] - t[0]) / 1000, (a[1] - t[1]) / 1000, t[2], a[2]));
	}

	private void cpuRow(String label, String template, String annotated) {
		Double t = this.annotationCpu.get(template);
		Double a = this.annotationCpu.get(annotated);
		if (t == null || a == null) {
			return;
		}
		line(String.format(Locale.ROOT, "| %s | %,.0f ns | %,.0f ns | %.2f µs |", label, t, a, (a - t) / 1000));
	}

	private void contendedTable() {
		if (this.contended.isEmpty()) {
			return;
		}
		line("### One key, 2 client instances × 4 threads");
		line("");
		line("Handoff: from the moment a holder starts its release to the moment the next holder's acquisition "
				+ "returns, one clock. Cross-instance: share of handoffs that went to the other instance. Less-served "
				+ "instance: its share of the critical sections (50 % when both instances had as many).");
		line("");
		line(CPU_NOTE);
		line("");
		line("| contender | handoffs/s | × floor | p50 µs | p99 µs | p50 × floor | cross-instance | less-served instance | server µs/op | client µs/op |");
		line("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
		for (ContendedHarness.Result result : this.contended) {
			if (result.error() != null) {
				line("| " + result.contender() + " | failed: " + result.error().replace('|', '/') + " | | | | | | | | |");
				continue;
			}
			ContendedHarness.Result floor = contendedFloor(result.contender());
			line(String.format(Locale.ROOT, "| %s | %,.0f | %s | %,.0f | %,.0f | %s | %.0f %% | %.0f %% | %s | %s |",
					result.contender(), result.throughput(),
					(floor != null) ? ratio(result.throughput(), floor.throughput()) : "–", result.p50Micros(),
					result.p99Micros(), (floor != null) ? ratio(result.p50Micros(), floor.p50Micros()) : "–",
					result.crossShare() * 100, result.instanceShare() * 100, micros(result.serverMicrosPerOp()),
					micros(result.clientMicrosPerOp())));
		}
		line("");
		provenance("contended");
	}

	private void tryBusyTable() {
		if (this.tryBusy.isEmpty()) {
			return;
		}
		line("### One key, 2 client instances × 4 threads, busy `tryAcquire`");
		line("");
		line("Every thread calls a single attempt with wait time 0 (Holdfast: `LockTemplate.tryAcquire`; floor: one "
				+ "`SET NX PX` / upsert / ephemeral create; peers: `tryLock()` / `lock(...)`) and calls it again at once when it "
				+ "fails. Critical sections: successful attempts per second. Handoff, cross-instance and less-served "
				+ "instance as above.");
		line("");
		line(CPU_NOTE + " Here an operation is a critical section; failed attempts add to its cost.");
		line("");
		line("| contender | critical sections/s | × floor | failed attempts/s | p50 µs | p99 µs | p50 × floor | cross-instance | less-served instance | server µs/op | client µs/op |");
		line("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
		for (ContendedHarness.Result result : this.tryBusy) {
			if (result.error() != null) {
				line("| " + result.contender() + " | failed: " + result.error().replace('|', '/') + " | | | | | | | | | |");
				continue;
			}
			ContendedHarness.Result floor = find(this.tryBusy, floorOf(result.contender()));
			line(String.format(Locale.ROOT, "| %s | %,.0f | %s | %,.0f | %,.0f | %,.0f | %s | %.0f %% | %.0f %% | %s | %s |",
					result.contender(), result.throughput(),
					(floor != null) ? ratio(result.throughput(), floor.throughput()) : "–", result.failedPerSecond(),
					result.p50Micros(), result.p99Micros(),
					(floor != null) ? ratio(result.p50Micros(), floor.p50Micros()) : "–", result.crossShare() * 100,
					result.instanceShare() * 100, micros(result.serverMicrosPerOp()), micros(result.clientMicrosPerOp())));
		}
		line("");
		provenance("trybusy");
	}

	/** The command and the load average at the start and end of the sections a table shows. */
	private void provenance(String... sections) {
		StringBuilder load = new StringBuilder();
		for (String section : sections) {
			Provenance.Window window = this.provenance.window(section);
			if (window == null) {
				continue;
			}
			if (!load.isEmpty()) {
				load.append("; ");
			}
			if (sections.length > 1) {
				load.append(section).append(' ');
			}
			load.append(window.startLoad()).append(" at start, ").append(window.endLoad()).append(" at end");
		}
		line("Command: `" + this.command + "`. Load average (1/5/15 min): " + load + ".");
		line("");
	}

	private void leasesTable() {
		if (this.leases.isEmpty()) {
			return;
		}
		line("### Held leases on one Redis (lease 3 s, renewed every 1 s)");
		line("");
		line("| contender | leases | acquire all, s | scripts per renewal tick | commands per tick, incl. inside scripts | client heap per lease |");
		line("|---|---:|---:|---:|---:|---:|");
		for (HeldLeasesHarness.Result result : this.leases) {
			if (result.error() != null) {
				line("| " + result.contender() + " | failed: " + result.error().replace('|', '/') + " | | | | |");
				continue;
			}
			line(String.format(Locale.ROOT, "| %s | %,d | %.1f | %.1f | %,.0f | %,.0f B |", result.contender(),
					result.leases(), result.acquireSeconds(), result.roundTripsPerTick(), result.innerCommandsPerTick(),
					result.bytesPerLease()));
		}
		line("");
		provenance("leases");
	}

	private void targets() {
		if (this.throughput.isEmpty() && this.annotation.isEmpty() && this.contended.isEmpty()) {
			// a run of other groups (-Dbench.only=trybusy,leases,multi): no target of issue 9 measured
			targets19();
			return;
		}
		line("### Targets of issue 9");
		line("");
		line("| target | measured | met |");
		line("|---|---:|:---:|");
		target("Redis, 1 thread: Holdfast ≥ 1.0× floor", ratioOf("redis-holdfast", "redis-floor", 1), 1.0, true);
		target("Redis, 8 threads: Holdfast ≥ 0.9× floor", ratioOf("redis-holdfast", "redis-floor", 8), 0.9, true);
		target("Redis, 8 threads: Holdfast ≥ 1.5× Redisson", ratioOf("redis-holdfast", "redis-redisson", 8), 1.5, true);
		ContendedHarness.Result holdfast = find("redis-holdfast");
		ContendedHarness.Result floor = find("redis-floor");
		target("Contended handoff p50 ≤ 1.2× floor",
				(holdfast != null && floor != null) ? holdfast.p50Micros() / floor.p50Micros() : Double.NaN, 1.2, false);
		if (holdfast != null) {
			double share = holdfast.crossShare();
			line(String.format(Locale.ROOT, "| Contended cross-instance share 40–60 %% | %.0f %% | %s |", share * 100,
					(share >= 0.4 && share <= 0.6) ? "yes" : "**no**"));
		}
		target("Redlock on 5 nodes ≥ 0.6× single-node floor (1 thread)", ratioOf("redlock-holdfast", "redis-floor", 1),
				0.6, true);
		target("Redlock on 5 nodes ≥ 0.6× single-node floor (8 threads)", ratioOf("redlock-holdfast", "redis-floor", 8),
				0.6, true);
		target("JDBC, 1 thread: Holdfast ≥ 0.9× floor", ratioOf("jdbc-holdfast", "jdbc-floor", 1), 0.9, true);
		target("JDBC, 8 threads: Holdfast ≥ 0.9× floor", ratioOf("jdbc-holdfast", "jdbc-floor", 8), 0.9, true);
		double[] t = this.annotation.get("templateWithKey");
		double[] a = this.annotation.get("annotationWithKey");
		if (t != null && a != null) {
			double micros = (a[0] - t[0]) / 1000;
			double bestMicros = (a[1] - t[1]) / 1000;
			line(String.format(Locale.ROOT, "| Annotation overhead ≤ 5 µs per call (SpEL key), wall time | %.2f µs (best %.2f µs) | %s |",
					micros, bestMicros, (micros <= 5) ? "yes" : ((bestMicros <= 5) ? "on best iterations only" : "**no**")));
		}
		Double tc = this.annotationCpu.get("templateWithKey");
		Double ac = this.annotationCpu.get("annotationWithKey");
		if (tc != null && ac != null) {
			double micros = (ac - tc) / 1000;
			line(String.format(Locale.ROOT, "| Annotation overhead ≤ 5 µs per call (SpEL key), CPU time | %.2f µs | %s |", micros,
					(micros <= 5) ? "yes" : "**no**"));
		}
		line("");
		line("From the tables above, same run.");
		line("");
		targets19();
	}

	/** Issue 19's goals that this run measures; a goal whose rows did not run is left out. */
	private void targets19() {
		StringBuilder rows = new StringBuilder();
		for (String backend : new String[] { "redis", "jdbc", "zookeeper" }) {
			ContendedHarness.Result holdfast = find(backend + "-holdfast");
			ContendedHarness.Result floor = find(backend + "-floor");
			if (holdfast != null) {
				double share = holdfast.crossShare();
				rows.append(String.format(Locale.ROOT, "| %s, one key, waiting: cross-instance share 40–60 %% | %.0f %% (floor %s) | %s |%n",
						backend, share * 100, (floor != null) ? String.format(Locale.ROOT, "%.0f %%", floor.crossShare() * 100) : "–",
						(share >= 0.4 && share <= 0.6) ? "yes" : "**no**"));
				rows.append(row19(backend + ", one key, waiting: handoff p50 ≤ 1.2× floor",
						(floor != null) ? holdfast.p50Micros() / floor.p50Micros() : Double.NaN, 1.2, false));
			}
			ContendedHarness.Result tryHoldfast = find(this.tryBusy, backend + "-holdfast");
			ContendedHarness.Result tryFloor = find(this.tryBusy, backend + "-floor");
			if (tryHoldfast != null && tryFloor != null) {
				rows.append(row19(backend + ", one key, busy `tryAcquire`: ≥ 0.5× floor's critical sections/s",
						tryHoldfast.throughput() / tryFloor.throughput(), 0.5, true));
			}
		}
		for (int threads : new int[] { 1, 8 }) {
			rows.append(row19("Redis, " + threads + " thread(s): ≥ " + ((threads == 1) ? "1.4" : "1.0") + "× floor (release off the caller's path)",
					column("redis-holdfast", "redis-floor", threads, 0), (threads == 1) ? 1.4 : 1.0, true));
			rows.append(row19("Redis, " + threads + " thread(s): B/op ≤ 1.2× floor",
					column("redis-holdfast", "redis-floor", threads, 3), 1.2, false));
			rows.append(row19("JDBC, " + threads + " thread(s): ≥ 0.9× floor", column("jdbc-holdfast", "jdbc-floor", threads, 0),
					0.9, true));
			rows.append(row19("JDBC, " + threads + " thread(s): server CPU per pair ≤ 1.1× floor",
					column("jdbc-holdfast", "jdbc-floor", threads, 4), 1.1, false));
			rows.append(row19("Redlock, " + threads + " thread(s): client CPU per pair ≤ 2× Holdfast on one node",
					column("redlock-holdfast", "redis-holdfast", threads, 5), 2.0, false));
			rows.append(row19("Redlock, " + threads + " thread(s): ≥ 3× Redisson RedLock",
					column("redlock-holdfast", "redlock-redisson", threads, 0), 3.0, true));
		}
		if (rows.isEmpty()) {
			return;
		}
		line("### Targets of issue 19");
		line("");
		line("| goal | measured | met |");
		line("|---|---:|:---:|");
		this.out.append(rows);
		line("");
		line("From the tables above, same run: ratios of means.");
		line("");
	}

	private static String row19(String label, double value, double bound, boolean atLeast) {
		if (Double.isNaN(value)) {
			return "";
		}
		boolean met = atLeast ? value >= bound : value <= bound;
		return String.format(Locale.ROOT, "| %s | %.2f× | %s |%n", label, value, met ? "yes" : "**no**");
	}

	/** Ratio of one column of the uncontended table (0 ops/s, 3 B/op, 4 server µs/op, 5 client µs/op). */
	private double column(String contender, String reference, int threads, int index) {
		double[] value = scores(contender, threads);
		double[] base = scores(reference, threads);
		if (value == null || base == null || value.length <= index || base.length <= index) {
			return Double.NaN;
		}
		return divide(value[index], base[index]);
	}

	private void target(String label, double[] value, double bound, boolean atLeast) {
		if (Double.isNaN(value[0])) {
			// not in this run (-Dbench.only, -Dbench.contenders)
			return;
		}
		boolean met = atLeast ? value[0] >= bound : value[0] <= bound;
		boolean bestMet = !Double.isNaN(value[1]) && (atLeast ? value[1] >= bound : value[1] <= bound);
		String best = Double.isNaN(value[1]) ? "" : String.format(Locale.ROOT, " (best iterations %.2f×)", value[1]);
		line(String.format(Locale.ROOT, "| %s | %.2f×%s | %s |", label, value[0], best,
				met ? "yes" : (bestMet ? "on best iterations only" : "**no**")));
	}

	private void target(String label, double value, double bound, boolean atLeast) {
		target(label, new double[] { value, Double.NaN }, bound, atLeast);
	}

	/** Ratio of means and ratio of best iterations. */
	private double[] ratioOf(String contender, String reference, int threads) {
		return new double[] { divide(score(contender, threads), score(reference, threads)),
				divide(best(contender, threads), best(reference, threads)) };
	}

	private static double divide(double value, double base) {
		return (Double.isNaN(value) || Double.isNaN(base) || base == 0) ? Double.NaN : value / base;
	}

	private double score(String contender, int threads) {
		double[] score = scores(contender, threads);
		return (score != null) ? score[0] : Double.NaN;
	}

	private double best(String contender, int threads) {
		double[] score = scores(contender, threads);
		return (score != null) ? score[2] : Double.NaN;
	}

	private double[] scores(String contender, int threads) {
		Map<Integer, double[]> scores = this.throughput.get(contender);
		return (scores != null) ? scores.get(threads) : null;
	}

	private static String floorOf(String contender) {
		if (contender.startsWith("jdbc")) {
			return "jdbc-floor";
		}
		if (contender.startsWith("zookeeper")) {
			return "zookeeper-floor";
		}
		return "redis-floor";
	}

	private ContendedHarness.Result contendedFloor(String contender) {
		return find(floorOf(contender));
	}

	private ContendedHarness.Result find(String contender) {
		return find(this.contended, contender);
	}

	private static ContendedHarness.Result find(List<ContendedHarness.Result> results, String contender) {
		for (ContendedHarness.Result result : results) {
			if (result.contender().equals(contender) && result.error() == null) {
				return result;
			}
		}
		return null;
	}

	private static String micros(double value) {
		if (Double.isNaN(value)) {
			return "–";
		}
		return String.format(Locale.ROOT, (value < 10) ? "%.1f" : "%,.0f", value);
	}

	private static String ratio(double value, double floor) {
		if (Double.isNaN(value) || Double.isNaN(floor) || floor == 0) {
			return "–";
		}
		return String.format(Locale.ROOT, "%.2f×", value / floor);
	}

	private void line(String text) {
		this.out.append(text).append('\n');
	}

}
