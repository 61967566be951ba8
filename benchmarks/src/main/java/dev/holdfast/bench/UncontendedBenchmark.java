package dev.holdfast.bench;

import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.infra.BenchmarkParams;

/**
 * Uncontended acquire + release: every thread locks and unlocks its own key, so nobody ever
 * waits. Run with 1 and with 8 threads (set by {@link Main}); the score is operations (one
 * acquisition and one release) per second over all threads.
 * <p>
 * Before JMH's warmup iterations, the trial's setup runs the operation on as many threads as the
 * trial until the JIT compiler is quiet ({@link #untilCompiled}): with 8 threads a contender and
 * its server keep both cores of the benchmark machine busy, so the compiler threads get a small
 * share of the CPU, and compilation that the 5 warmup seconds left unfinished ran inside the
 * measurement, charged to the contender with the most code to compile.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class UncontendedBenchmark {

	/** JIT compilation time per second of warm calls below which the compiler counts as quiet. */
	private static final long QUIET_COMPILE_MILLIS = 20;

	/** The longest the setup warms the JIT up (5 s in a quick run); JMH's warmup iterations follow. */
	private static final long MAX_JIT_WARMUP_NANOS = TimeUnit.SECONDS
		.toNanos(Boolean.getBoolean("bench.quick") ? 5 : 20);

	/** Which contender; see {@link Clients#create(String)}. */
	@Param("redis-floor")
	public String contender;

	private LockClient client;

	@Setup(Level.Trial)
	public void setUp(BenchmarkParams params) throws Exception {
		this.client = Clients.create(this.contender);
		warmUp();
		untilCompiled(params.getThreads());
	}

	private void warmUp() throws Exception {
		// Connections, scripts and subscriptions are set up lazily by most clients: do that outside
		// the measurement, and tolerate a slow first call on a loaded machine.
		Exception last = null;
		for (int i = 0; i < 20; i++) {
			try {
				this.client.lockUnlock("warm-" + Long.toHexString(ThreadLocalRandom.current().nextLong()));
				return;
			}
			catch (Exception ex) {
				last = ex;
				Thread.sleep(250);
			}
		}
		throw last;
	}

	/**
	 * Runs the operation on {@code threads} threads, each on a key of its own, in rounds of a
	 * second until a round adds less than {@value #QUIET_COMPILE_MILLIS} ms of JIT compilation
	 * time (at most 20 s).
	 */
	private void untilCompiled(int threads) throws Exception {
		CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
		if (jit == null || !jit.isCompilationTimeMonitoringSupported()) {
			return;
		}
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		try {
			long start = System.nanoTime();
			long compiled = jit.getTotalCompilationTime();
			while (System.nanoTime() - start < MAX_JIT_WARMUP_NANOS) {
				long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
				List<Future<?>> running = new ArrayList<>();
				for (int t = 0; t < threads; t++) {
					String key = "warm-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
					running.add(pool.submit(() -> {
						while (System.nanoTime() - end < 0) {
							this.client.lockUnlock(key);
						}
						return null;
					}));
				}
				for (Future<?> thread : running) {
					thread.get();
				}
				long now = jit.getTotalCompilationTime();
				if (now - compiled < QUIET_COMPILE_MILLIS) {
					break;
				}
				compiled = now;
			}
			System.err.printf("[bench] %s, %d thread(s): JIT warm-up %d s%n", this.contender, threads,
					TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start));
		}
		finally {
			pool.shutdownNow();
		}
	}

	@TearDown(Level.Trial)
	public void tearDown() throws Exception {
		this.client.close();
	}

	@Benchmark
	public void lockUnlock(ThreadKey key) throws Exception {
		this.client.lockUnlock(key.key);
	}

	/** A key of this thread alone. */
	@State(Scope.Thread)
	public static class ThreadKey {

		String key;

		@Setup(Level.Trial)
		public void setUp() {
			this.key = "bench-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
		}

	}

}
