package dev.holdfast.bench;

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

/**
 * Uncontended acquire + release: every thread locks and unlocks its own key, so nobody ever
 * waits. Run with 1 and with 8 threads (set by {@link Main}); the score is operations (one
 * acquisition and one release) per second over all threads.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
public class UncontendedBenchmark {

	/** Which contender; see {@link Clients#create(String)}. */
	@Param("redis-floor")
	public String contender;

	private LockClient client;

	@Setup(Level.Trial)
	public void setUp() throws Exception {
		this.client = Clients.create(this.contender);
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
