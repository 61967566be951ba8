package dev.holdfast.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;

import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;

/**
 * One key contended by two independent client instances (own connections, own lock state) with
 * four threads each. Not JMH: what matters here is the handoff, measured on one clock (this JVM's
 * {@code nanoTime}) from the moment a holder starts its release to the moment the next holder's
 * acquisition returns, and which instance the lock went to. A holder records the previous handoff
 * while it holds the lock, so the bookkeeping never races.
 * <p>
 * Two ways to want the lock: {@link Mode#WAIT}, each thread waits as the contender waits by
 * default ({@link LockClient#lock}); {@link Mode#TRY_BUSY}, each thread calls a single attempt
 * ({@link LockClient#tryLock}: {@code LockTemplate.tryAcquire} with wait time 0, the floor's one
 * {@code SET NX PX}) in a loop, at once again after a failure, as code polling a lock does; the
 * failed attempts are counted.
 */
final class ContendedHarness {

	static final int INSTANCES = 2;

	static final int THREADS_PER_INSTANCE = 4;

	/**
	 * {@code -Dbench.trybusy.yield=true}: in the busy-{@code tryAcquire} scenario a thread yields
	 * its CPU after a failed attempt (a diagnosis: does a failure that costs no round trip starve
	 * the holder of CPU?).
	 */
	private static final boolean YIELD_AFTER_FAILURE = Boolean.getBoolean("bench.trybusy.yield");

	enum Mode {

		/** Every thread waits for the lock as the contender waits by default. */
		WAIT,

		/** Every thread retries a single attempt at once, without waiting in between. */
		TRY_BUSY

	}

	/**
	 * One run. {@code instanceShare}: the share of the critical sections that the less-served
	 * instance had (50 % when both had as many, whatever the order of the handoffs);
	 * {@code serverMicrosPerOp}: CPU of the contender's servers ({@link ServerCpu}) per
	 * handoff; {@code clientMicrosPerOp}: CPU of this JVM (both client instances, GC, JIT; not the
	 * ZooKeeper server that runs here) per handoff; NaN where unknown.
	 */
	record Result(String contender, Mode mode, long handoffs, long failedAttempts, double seconds, double p50Micros,
			double p99Micros, double crossShare, double instanceShare, double serverMicrosPerOp,
			double clientMicrosPerOp, String error) {

		/** Handoffs (successful critical sections but the first) per second. */
		double throughput() {
			return this.handoffs / this.seconds;
		}

		double failedPerSecond() {
			return this.failedAttempts / this.seconds;
		}

	}

	private ContendedHarness() {
	}

	static Result run(String contender, Duration warmup, Duration measure) {
		return run(contender, Mode.WAIT, warmup, measure);
	}

	static Result run(String contender, Mode mode, Duration warmup, Duration measure) {
		List<LockClient> clients = new ArrayList<>();
		try {
			for (int i = 0; i < INSTANCES; i++) {
				clients.add(Clients.create(contender));
			}
			String key = "contended-" + Long.toHexString(ThreadLocalRandom.current().nextLong());
			round(clients, mode, key, warmup);
			long serverBefore = ServerCpu.nanos(contender);
			long clientBefore = clientNanos(contender);
			Partial partial = round(clients, mode, key, measure);
			long serverAfter = ServerCpu.nanos(contender);
			long clientAfter = clientNanos(contender);
			long operations = partial.histogram().getTotalCount();
			return partial.result(contender, mode, ServerCpu.microsPerOp(serverBefore, serverAfter, operations),
					ServerCpu.microsPerOp(clientBefore, clientAfter, operations));
		}
		catch (Throwable ex) {
			return new Result(contender, mode, 0, 0, 1, Double.NaN, Double.NaN, Double.NaN, Double.NaN, Double.NaN,
					Double.NaN, String.valueOf(ex));
		}
		finally {
			for (LockClient client : clients) {
				try {
					client.close();
				}
				catch (Exception ex) {
					// ignore at shutdown
				}
			}
		}
	}

	private static long clientNanos(String contender) {
		long process = ServerCpu.processNanos();
		return (process < 0) ? -1 : process - ServerCpu.zooKeeperInThisJvm(contender);
	}

	private static Partial round(List<LockClient> clients, Mode mode, String key, Duration duration) throws Exception {
		Histogram handoffs = new ConcurrentHistogram(3);
		AtomicLong cross = new AtomicLong();
		LongAdder failed = new LongAdder();
		LongAdder[] holds = new LongAdder[clients.size()];
		AtomicLong lastReleaseNanos = new AtomicLong();
		AtomicLong lastInstance = new AtomicLong(-1);
		AtomicReference<Throwable> failure = new AtomicReference<>();
		long start = System.nanoTime();
		long deadline = start + duration.toNanos();
		List<Thread> threads = new ArrayList<>();
		for (int i = 0; i < clients.size(); i++) {
			LockClient client = clients.get(i);
			int instance = i;
			holds[i] = new LongAdder();
			for (int t = 0; t < THREADS_PER_INSTANCE; t++) {
				Thread thread = new Thread(() -> {
					try {
						while (System.nanoTime() < deadline && failure.get() == null) {
							LockClient.Held held = (mode == Mode.WAIT) ? client.lock(key) : client.tryLock(key);
							if (held == null) {
								failed.increment();
								if (YIELD_AFTER_FAILURE) {
									Thread.yield();
								}
								continue;
							}
							long acquired = System.nanoTime();
							holds[instance].increment();
							long released = lastReleaseNanos.get();
							if (released != 0) {
								handoffs.recordValue(Math.max(0, acquired - released));
								if (lastInstance.get() != instance) {
									cross.incrementAndGet();
								}
							}
							lastInstance.set(instance);
							lastReleaseNanos.set(System.nanoTime());
							held.release();
						}
					}
					catch (Throwable ex) {
						failure.compareAndSet(null, ex);
					}
				}, "contended-" + i + "-" + t);
				threads.add(thread);
				thread.start();
			}
		}
		for (Thread thread : threads) {
			thread.join(Duration.ofSeconds(60).toMillis());
		}
		double seconds = (System.nanoTime() - start) / 1e9;
		if (failure.get() != null) {
			throw new IllegalStateException("contended run failed", failure.get());
		}
		long total = 0;
		long least = Long.MAX_VALUE;
		for (LongAdder count : holds) {
			total += count.sum();
			least = Math.min(least, count.sum());
		}
		double instanceShare = (total == 0) ? Double.NaN : (double) least / total;
		return new Partial(handoffs, cross.get(), instanceShare, failed.sum(), seconds);
	}

	private record Partial(Histogram histogram, long cross, double instanceShare, long failed, double seconds) {

		Result result(String contender, Mode mode, double serverMicrosPerOp, double clientMicrosPerOp) {
			long count = this.histogram.getTotalCount();
			return new Result(contender, mode, count, this.failed, this.seconds,
					this.histogram.getValueAtPercentile(50) / 1000.0,
					this.histogram.getValueAtPercentile(99) / 1000.0, (count == 0) ? Double.NaN : (double) this.cross / count,
					this.instanceShare, serverMicrosPerOp, clientMicrosPerOp, null);
		}

	}

}
