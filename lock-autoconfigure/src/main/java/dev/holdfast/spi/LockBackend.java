package dev.holdfast.spi;

import java.time.Duration;

/**
 * One place where locks live. A backend is not reentrant and knows nothing of threads: the
 * engine above it handles reentrancy, waiting and renewal. Every method is one attempt with a
 * bounded network timeout; none of them waits for a held lock.
 * <p>
 * Implementations document which clock decides expiry, how waiters learn of a release, and
 * what the order of fencing tokens rests on. Failures to reach the backend are reported as
 * {@link dev.holdfast.LockBackendException}.
 */
public interface LockBackend {

	/** Short name for metrics and logs: {@code redis}, {@code jdbc}, ... */
	String name();

	/**
	 * Takes the lock if no live owner holds it, in one round trip.
	 * @param key the full backend key
	 * @param owner a token unique to this acquisition
	 * @param ttl how long the lock lives unless renewed
	 */
	AcquireResult tryAcquire(String key, String owner, Duration ttl);

	/**
	 * Deletes the lock if {@code owner} still holds it, in one round trip, and wakes waiters where
	 * the backend can.
	 * @return whether the lock was held by {@code owner} and is now released
	 */
	boolean release(String key, String owner);

	/**
	 * How much of a lock's time to live the engine sets aside for clocks that run at different
	 * rates: it counts a lock as held until {@code ttl} minus this allowance after the request
	 * that took or renewed it was sent. The default, 1% of the time to live plus 2 ms, suits a
	 * backend whose single server decides expiry; a backend with drift settings of its own
	 * returns what they give, so that the engine never believes a lock held longer than the
	 * backend does.
	 * @param ttl the time to live of the lock
	 * @return the allowance, shorter than {@code ttl} for every time to live the backend accepts
	 */
	default Duration clockDriftAllowance(Duration ttl) {
		// In nanoseconds where they suffice: Duration.dividedBy goes through BigDecimal.
		return (ttl.getSeconds() < 9_000_000_000L) ? Duration.ofNanos(ttl.toNanos() / 100 + 2_000_000)
				: ttl.dividedBy(100).plusMillis(2);
	}

}
