package dev.holdfast.sample;

import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import org.springframework.stereotype.Component;

import dev.holdfast.LockListener;

/**
 * Counts what this instance's locks did, per lock name: acquisitions, how many of them had to
 * wait for another holder, attempts that gave up, skipped job runs, backend failures and lost
 * leases.
 */
@Component
public class LockStats implements LockListener {

	/** An acquisition slower than this waited for another holder rather than for a round trip. */
	static final Duration WAIT_THRESHOLD = Duration.ofMillis(10);

	private final Map<String, Counters> counters = new ConcurrentHashMap<>();

	@Override
	public void acquired(String name, String backend, Duration waited) {
		Counters counters = counters(name);
		counters.acquired.incrementAndGet();
		if (waited.compareTo(WAIT_THRESHOLD) >= 0) {
			counters.waited.incrementAndGet();
		}
		counters.maxWaitMillis.accumulateAndGet(waited.toMillis(), Math::max);
	}

	@Override
	public void notAcquired(String name, String backend, Duration waited) {
		counters(name).notAcquired.incrementAndGet();
	}

	@Override
	public void tickSkipped(String name, String backend, String reason) {
		counters(name).skipped.incrementAndGet();
	}

	@Override
	public void failed(String name, String backend, Duration waited, RuntimeException ex) {
		counters(name).failed.incrementAndGet();
	}

	@Override
	public void leaseLost(String name, String backend) {
		counters(name).leasesLost.incrementAndGet();
	}

	/**
	 * A snapshot of the counters, by lock name.
	 */
	public Map<String, Snapshot> snapshot() {
		Map<String, Snapshot> result = new TreeMap<>();
		this.counters.forEach((name, counters) -> result.put(name, counters.snapshot()));
		return result;
	}

	private Counters counters(String name) {
		return this.counters.computeIfAbsent(name, (key) -> new Counters());
	}

	/**
	 * What one lock name did on this instance.
	 *
	 * @param acquired successful acquisitions
	 * @param waited acquisitions that took 10 ms or more, i.e. waited for another holder
	 * @param maxWaitMillis the longest acquisition
	 * @param notAcquired attempts that gave up because another owner held the lock
	 * @param skipped runs of a scheduled job skipped because another instance ran the tick
	 * @param failed attempts that failed because the backend could not be reached
	 * @param leasesLost leases that could not be renewed
	 */
	public record Snapshot(long acquired, long waited, long maxWaitMillis, long notAcquired, long skipped,
			long failed, long leasesLost) {
	}

	private static final class Counters {

		final AtomicLong acquired = new AtomicLong();

		final AtomicLong waited = new AtomicLong();

		final AtomicLong maxWaitMillis = new AtomicLong();

		final AtomicLong notAcquired = new AtomicLong();

		final AtomicLong skipped = new AtomicLong();

		final AtomicLong failed = new AtomicLong();

		final AtomicLong leasesLost = new AtomicLong();

		Snapshot snapshot() {
			return new Snapshot(this.acquired.get(), this.waited.get(), this.maxWaitMillis.get(),
					this.notAcquired.get(), this.skipped.get(), this.failed.get(), this.leasesLost.get());
		}

	}

}
