package dev.holdfast.bench;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The Markdown table of a group of contenders measured against each backend's floor
 * ({@code multi}: {@link SeveralKeysClients}; {@code readwrite}: {@link ReadWriteClients}), ratios
 * within the run: JMH, then the same contenders in alternating rounds.
 */
final class GroupTable {

	/**
	 * A group: its section in the {@link Provenance} ({@code -rounds} appended for the rounds), its
	 * heading and introduction, the label of the ratio to {@code <backend>-floor}, its contenders in
	 * table order, and per contender suffix the contenders of the same backend it is compared with
	 * besides the floor.
	 */
	record Spec(String section, String heading, String intro, String floorLabel, List<String> contenders,
			Map<String, List<String>> compared) {
	}

	static final Spec SEVERAL_KEYS = new Spec("multi",
			"Several keys and semaphore permits (issue 31), uncontended, ops/s over all threads",
			"Each thread locks a key `k` of its own: as two keys `k:a`, `k:b` (Holdfast: name `k`, keys `a`, `b`), "
					+ "or a permit of the free semaphore `k` of " + SeveralKeysClients.PERMITS + " permits. × 1-key floor: "
					+ "to `<backend>-floor` (one key), same run.",
			"× 1-key floor", SeveralKeysClients.CONTENDERS,
			Map.of("-floor-2keys-1rt", List.of("-floor-2keys"), "-holdfast-2keys-serial", List.of("-floor-2keys"),
					"-holdfast-2keys", List.of("-holdfast-2keys-serial", "-floor-2keys", "-floor-2keys-1rt"),
					"-holdfast-permit", List.of("-holdfast")));

	private GroupTable() {
	}

	/** The section, or nothing if the group did not run. */
	static String render(Spec spec, Map<String, Map<Integer, double[]>> scores,
			Map<Integer, Map<String, List<Double>>> rounds, Provenance provenance) {
		if (scores.isEmpty() && rounds.isEmpty()) {
			return "";
		}
		StringBuilder out = new StringBuilder();
		out.append("### ").append(spec.heading()).append("\n\n");
		out.append(spec.intro()).append(" Compared: ratios to the named contenders of the same "
				+ "backend, same run (of means). Server µs/op as in the uncontended table.\n\n");
		out.append("| contender | 1 thread, ops/s | " + spec.floorLabel() + " | compared | B/op | server µs/op "
				+ "| 8 threads, ops/s | " + spec.floorLabel() + " | compared | B/op | server µs/op |\n");
		out.append("|---|---:|---:|---|---:|---:|---:|---:|---|---:|---:|\n");
		for (String contender : spec.contenders()) {
			Map<Integer, double[]> byThreads = scores.get(contender);
			if (byThreads == null) {
				continue;
			}
			String backend = contender.substring(0, contender.indexOf('-'));
			StringBuilder row = new StringBuilder("| " + contender + " |");
			for (int threads : new int[] { 1, 8 }) {
				double[] score = byThreads.get(threads);
				if (score == null) {
					row.append(" – | – | – | – | – |");
					continue;
				}
				List<String> compared = new ArrayList<>();
				for (String other : spec.compared().getOrDefault(contender.substring(backend.length()), List.of())) {
					compared.add(ratio(score, scores, backend + other, threads) + " " + other.substring(1));
				}
				String error = Double.isNaN(score[1]) ? "" : String.format(Locale.ROOT, " ± %,.0f", score[1]);
				row.append(String.format(Locale.ROOT, " %,.0f%s | %s | %s | %,.0f | %s |", score[0], error,
						ratio(score, scores, backend + "-floor", threads),
						compared.isEmpty() ? "–" : String.join(", ", compared), score[3], micros(score[4])));
			}
			out.append(row).append('\n');
		}
		provenance(out, provenance.window(spec.section()));
		if (!rounds.isEmpty()) {
			rounds(out, spec, rounds);
			provenance(out, provenance.window(spec.section() + "-rounds"));
		}
		return out.toString();
	}

	/** The same contenders in alternating rounds: medians of the rates and of the ratios of each round. */
	private static void rounds(StringBuilder out, Spec spec, Map<Integer, Map<String, List<Double>>> rounds) {
		out.append("#### The same in alternating rounds (one JVM, rounds of 500 ms)\n\n");
		out.append("Each backend's contenders in turn, round after round, in the runner's JVM: a ratio is the median of "
				+ "the ratios of the same round (quartiles in brackets), so that it compares rates measured a second "
				+ "apart. Ops/s: median of the rounds.\n\n");
		out.append("| contender | 1 thread, ops/s | " + spec.floorLabel() + " | compared | 8 threads, ops/s | "
				+ spec.floorLabel() + " | compared |\n");
		out.append("|---|---:|---:|---|---:|---:|---|\n");
		for (String contender : spec.contenders()) {
			String backend = contender.substring(0, contender.indexOf('-'));
			StringBuilder row = new StringBuilder("| " + contender + " |");
			boolean any = false;
			for (int threads : new int[] { 1, 8 }) {
				Map<String, List<Double>> byContender = rounds.getOrDefault(threads, Map.of());
				List<Double> rates = byContender.get(contender);
				if (rates == null || rates.isEmpty()) {
					row.append(" – | – | – |");
					continue;
				}
				any = true;
				List<String> compared = new ArrayList<>();
				for (String other : spec.compared().getOrDefault(contender.substring(backend.length()), List.of())) {
					compared.add(roundRatio(rates, byContender.get(backend + other)) + " " + other.substring(1));
				}
				List<Double> sorted = new ArrayList<>(rates);
				Collections.sort(sorted);
				row.append(String.format(Locale.ROOT, " %,.0f | %s | %s |", InterleavedRatio.median(sorted),
						roundRatio(rates, byContender.get(backend + "-floor")),
						compared.isEmpty() ? "–" : String.join(", ", compared)));
			}
			if (any) {
				out.append(row).append('\n');
			}
		}
	}

	/** Median (quartiles) of the ratios round by round, or – if {@code base} did not run. */
	private static String roundRatio(List<Double> rates, List<Double> base) {
		if (base == null || base.size() != rates.size()) {
			return "–";
		}
		List<Double> ratios = InterleavedRatio.ratios(rates, base);
		return String.format(Locale.ROOT, "%.2f× (%.2f–%.2f)", InterleavedRatio.median(ratios),
				ratios.get(ratios.size() / 4), ratios.get(ratios.size() * 3 / 4));
	}

	private static void provenance(StringBuilder out, Provenance.Window window) {
		out.append("\nCommand: `").append(Provenance.command()).append("`. Load average (1/5/15 min): ")
			.append((window != null) ? window.startLoad() + " at start, " + window.endLoad() + " at end" : "?")
			.append(".\n\n");
	}

	private static String ratio(double[] score, Map<String, Map<Integer, double[]>> scores, String other, int threads) {
		Map<Integer, double[]> byThreads = scores.get(other);
		double[] base = (byThreads != null) ? byThreads.get(threads) : null;
		if (base == null || base[0] == 0 || Double.isNaN(score[0])) {
			return "–";
		}
		return String.format(Locale.ROOT, "%.2f×", score[0] / base[0]);
	}

	private static String micros(double value) {
		if (Double.isNaN(value)) {
			return "–";
		}
		return String.format(Locale.ROOT, (value < 10) ? "%.1f" : "%,.0f", value);
	}

}
