package dev.holdfast;

import java.time.Duration;
import java.time.Instant;

/**
 * A held lock. Closing it releases the lock with an owner check: a lease never deletes a lock
 * that another owner has taken since it expired.
 * <p>
 * Use it in a try-with-resources block:
 * <pre>{@code
 * try (Lease lease = lockTemplate.acquire("report", null, LockOptions.defaults())) {
 *     repository.write(data, lease.fencingToken());
 * }
 * }</pre>
 */
public interface Lease extends AutoCloseable {

	/** The backend key of the lock, {@code <prefix><name>[:<encoded key>]}. */
	String key();

	/**
	 * The fencing token of this acquisition: for one lock, a later holder always has a larger
	 * token than every earlier holder. Pass it to the guarded resource so that it can reject
	 * writes from a holder that paused past its lease.
	 */
	long fencingToken();

	/** When this process acquired the lock (this JVM's wall clock, for display only). */
	Instant acquiredAt();

	/**
	 * When the lock expires on the backend unless renewed, estimated conservatively from the
	 * moment the acquiring request was sent (this JVM's wall clock, for display only).
	 */
	Instant expiresAt();

	/**
	 * Whether this process still holds the lock: not released, not found lost by renewal, and
	 * not past its expiry as measured on this JVM's monotonic clock. A {@code true} answer is
	 * only as good as the time it takes to act on it: fencing tokens protect the resource.
	 */
	boolean isValid();

	/**
	 * Sets the remaining time to live of the lock on the backend to {@code ttl} from now, if this
	 * lease still owns it; renewals, if on, continue with the new time to live.
	 * @return whether the lock was extended; {@code false} means the lease is lost
	 */
	boolean extend(Duration ttl);

	/**
	 * Releases the lock (or leaves a reentrant hold). Never throws: a release that cannot reach
	 * the backend is logged, and the lock then expires after its time to live.
	 * <p>
	 * Where the backend can release without blocking (Redis on Lettuce) and
	 * {@code holdfast.release-in-background} is on (the default), this returns once the release is
	 * sent, before the backend answered; a later acquisition of the same lock from this
	 * application still sees the release. To wait for the answer, use
	 * {@link AsyncLockTemplate#releaseAsync(Lease)} instead.
	 */
	@Override
	void close();

}
