package dev.holdfast.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A diagnostic, not part of the table: runs acquire + release pairs of one contender on
 * {@code threads} threads of its own key each for a while, then reports the process CPU per pair
 * (user and system, from {@code /proc/self/stat}) and the CPU of each group of threads (callers,
 * I/O threads, GC, JIT...). Run under {@code strace -c -f} to count system calls per pair.
 * <p>
 * {@code java -Dbench.redlock.ports=... -Dbench.redis.port=... -cp benchmarks.jar
 * dev.holdfast.bench.PairCpu <contender> <threads> <warmup s> <measure s>}
 */
public final class PairCpu {

	private PairCpu() {
	}

	public static void main(String[] args) throws Exception {
		String contender = args[0];
		int threads = Integer.parseInt(args[1]);
		long warmupMillis = (long) (Double.parseDouble(args[2]) * 1000);
		long measureMillis = (long) (Double.parseDouble(args[3]) * 1000);
		try (LockClient client = Clients.create(contender)) {
			AtomicBoolean stop = new AtomicBoolean();
			AtomicLong pairs = new AtomicLong();
			List<Thread> workers = new ArrayList<>();
			CountDownLatch started = new CountDownLatch(threads);
			for (int t = 0; t < threads; t++) {
				String key = "pair-cpu-" + t + "-" + System.nanoTime();
				Thread worker = new Thread(() -> {
					started.countDown();
					try {
						while (!stop.get()) {
							client.lockUnlock(key);
							pairs.incrementAndGet();
						}
					}
					catch (Exception ex) {
						ex.printStackTrace();
					}
				}, "pair-caller-" + t);
				workers.add(worker);
				worker.start();
			}
			started.await();
			Thread.sleep(warmupMillis);
			ThreadMXBean mx = ManagementFactory.getThreadMXBean();
			Map<String, Long> before = threadCpu(mx);
			long[] procBefore = procCpu();
			long pairsBefore = pairs.get();
			long start = System.nanoTime();
			Thread.sleep(measureMillis);
			long[] procAfter = procCpu();
			long pairsAfter = pairs.get();
			long elapsed = System.nanoTime() - start;
			Map<String, Long> after = threadCpu(mx);
			stop.set(true);
			for (Thread worker : workers) {
				worker.join(5000);
			}
			double n = pairsAfter - pairsBefore;
			System.out.printf("%s threads=%d pairs=%d pairs/s=%.0f%n", contender, threads, (long) n,
					n / (elapsed / 1e9));
			double tick = 1e6 / 100; // µs per clock tick
			System.out.printf("process CPU per pair: user %.1f µs, system %.1f µs, total %.1f µs%n",
					(procAfter[0] - procBefore[0]) * tick / n, (procAfter[1] - procBefore[1]) * tick / n,
					(procAfter[0] + procAfter[1] - procBefore[0] - procBefore[1]) * tick / n);
			Map<String, Long> groups = new TreeMap<>();
			after.forEach((name, cpu) -> groups.merge(name, cpu - before.getOrDefault(name, 0L), Long::sum));
			groups.forEach((name, cpu) -> {
				if (cpu / n >= 500) {
					System.out.printf("  %-40s %.1f µs/pair%n", name, cpu / n / 1000);
				}
			});
		}
		System.exit(0);
	}

	private static Map<String, Long> threadCpu(ThreadMXBean mx) {
		Map<String, Long> groups = new TreeMap<>();
		for (long id : mx.getAllThreadIds()) {
			var info = mx.getThreadInfo(id);
			long cpu = mx.getThreadCpuTime(id);
			if (info != null && cpu > 0) {
				groups.merge(info.getThreadName().replaceAll("[-#]?\\d+$", "").replaceAll("\\d+", "N"), cpu, Long::sum);
			}
		}
		return groups;
	}

	// utime and stime of this process in clock ticks
	private static long[] procCpu() throws Exception {
		String stat = Files.readString(Path.of("/proc/self/stat"));
		String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
		return new long[] { Long.parseLong(fields[11]), Long.parseLong(fields[12]) };
	}

}
