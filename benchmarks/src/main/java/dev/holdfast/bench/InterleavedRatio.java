package dev.holdfast.bench;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.LongAdder;

/**
 * Uncontended throughput of several contenders relative to the first, measured in alternating
 * short rounds in one JVM, so that each ratio compares rounds a second apart instead of JMH forks
 * minutes apart. On a machine that other jobs load in bursts, the median of the per-round ratios
 * is far steadier than the ratio of two JMH runs. The contenders connect to
 * {@code -Dbench.redis.port} (default 6379).
 * <p>
 * Run: {@code java -Dbench.redis.port=PORT -cp benchmarks/target/benchmarks.jar
 * dev.holdfast.bench.InterleavedRatio [threads] [rounds] [round-millis] [contenders...]}; the
 * defaults are 1 thread, 40 rounds of 500 ms, {@code redis-floor redis-holdfast}.
 */
public final class InterleavedRatio {

	private InterleavedRatio() {
	}

	public static void main(String[] args) throws Exception {
		int threads = (args.length > 0) ? Integer.parseInt(args[0]) : 1;
		int rounds = (args.length > 1) ? Integer.parseInt(args[1]) : 40;
		long roundMillis = (args.length > 2) ? Long.parseLong(args[2]) : 500;
		List<String> contenders = (args.length > 3) ? Arrays.asList(args).subList(3, args.length)
				: List.of("redis-floor", "redis-holdfast");
		Map<String, List<Double>> opsPerSecond = measure(contenders, threads, rounds, roundMillis);
		List<Double> base = opsPerSecond.get(contenders.get(0));
		System.out.printf("%d thread(s), %d rounds of %d ms; ratio = contender / %s in the same round%n", threads,
				rounds, roundMillis, contenders.get(0));
		for (String contender : contenders) {
			List<Double> ratios = ratios(opsPerSecond.get(contender), base);
			List<Double> rates = new ArrayList<>(opsPerSecond.get(contender));
			Collections.sort(rates);
			System.out.printf("%-26s median %,9.0f ops/s, best %,9.0f | ratio median %.2f×, quartiles %.2f–%.2f×%n",
					contender, median(rates), rates.get(rates.size() - 1), median(ratios),
					ratios.get(ratios.size() / 4), ratios.get(ratios.size() * 3 / 4));
		}
	}

	/**
	 * Ops/s of each contender in each measured round: two warmup rounds, then {@code rounds} rounds of
	 * {@code roundMillis} in which every contender runs in turn, in an order shuffled per round (fixed
	 * seed), so that no contender always goes first nor always follows the same one (whose work left
	 * in the background, such as releases, would slow it). All contenders' clients are open throughout.
	 */
	static Map<String, List<Double>> measure(List<String> contenders, int threads, int rounds, long roundMillis)
			throws Exception {
		Map<String, LockClient> clients = new LinkedHashMap<>();
		Map<String, List<Double>> opsPerSecond = new LinkedHashMap<>();
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		try {
			for (String contender : contenders) {
				clients.put(contender, Clients.create(contender));
				opsPerSecond.put(contender, new ArrayList<>());
			}
			List<String> order = new ArrayList<>(contenders);
			Random random = new Random(31);
			for (int round = -2; round < rounds; round++) {
				Collections.shuffle(order, random);
				for (String contender : order) {
					double rate = round(clients.get(contender), contender, threads, roundMillis, pool);
					if (round >= 0) {
						opsPerSecond.get(contender).add(rate);
					}
				}
			}
		}
		finally {
			pool.shutdownNow();
			for (LockClient client : clients.values()) {
				client.close();
			}
		}
		return opsPerSecond;
	}

	/** The ratios of two contenders' rates round by round, sorted. */
	static List<Double> ratios(List<Double> rates, List<Double> base) {
		List<Double> ratios = new ArrayList<>();
		for (int i = 0; i < base.size(); i++) {
			ratios.add(rates.get(i) / base.get(i));
		}
		Collections.sort(ratios);
		return ratios;
	}

	private static double round(LockClient client, String contender, int threads, long millis, ExecutorService pool)
			throws Exception {
		long end = System.nanoTime() + millis * 1_000_000L;
		LongAdder operations = new LongAdder();
		List<Future<?>> running = new ArrayList<>();
		for (int t = 0; t < threads; t++) {
			String key = "interleaved-" + contender + "-" + t;
			running.add(pool.submit(() -> {
				while (System.nanoTime() < end) {
					client.lockUnlock(key);
					operations.increment();
				}
				return null;
			}));
		}
		for (Future<?> thread : running) {
			thread.get();
		}
		return operations.sum() * 1000.0 / millis;
	}

	static double median(List<Double> sorted) {
		return sorted.get(sorted.size() / 2);
	}

}
