package dev.holdfast.scheduling;

import java.time.Duration;
import java.time.Instant;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import dev.holdfast.Lease;
import dev.holdfast.LockContext;
import dev.holdfast.core.LeaseInfo;

/**
 * The lease of a job lock, bound to {@link LockContext} while the job's method runs, as a
 * {@code @DistributedLock} method's lease is: its key, the backend's fencing token of this run,
 * and its validity.
 * <ul>
 * <li>A job lock is never renewed: {@code lockAtMostFor} is what frees it when its holder hangs.
 * The lease is valid until {@code lockAtMostFor}, less the backend's allowance for clock drift,
 * after the acquiring request was sent, and no longer once the run has ended.</li>
 * <li>{@link #extend(Duration)} sets the lock's time to live on the backend, for a run that knows
 * it needs longer; a failed extension marks the lease lost.</li>
 * <li>{@link #close()} ends this view of the lock and nothing else: when the method returns, the
 * run releases the lock or keeps it until {@code lockAtLeastFor} after the start.</li>
 * </ul>
 */
final class JobLease implements Lease {

	private static final Log logger = LogFactory.getLog(JobLease.class);

	private final JobLocks locks;

	private final JobLocks.Held lock;

	private final Instant acquiredAt;

	/** Until when the lock is held for sure, {@link System#nanoTime()}. */
	private volatile long validUntilNanos;

	/** Whether an extension found the lock taken by another owner. */
	private volatile boolean lost;

	private volatile boolean closed;

	JobLease(JobLocks locks, JobLocks.Held lock) {
		this.locks = locks;
		this.lock = lock;
		this.acquiredAt = locks.now().minusNanos(System.nanoTime() - lock.acquiredNanos());
		this.validUntilNanos = lock.validUntilNanos();
	}

	JobLocks.Held lock() {
		return this.lock;
	}

	@Override
	public String key() {
		return this.lock.key();
	}

	@Override
	public long fencingToken() {
		return this.lock.fencingToken();
	}

	@Override
	public Instant acquiredAt() {
		return this.acquiredAt;
	}

	@Override
	public Instant expiresAt() {
		return this.locks.now().plusNanos(this.validUntilNanos - System.nanoTime());
	}

	@Override
	public boolean isValid() {
		return !this.closed && held();
	}

	/** Whether the run holds the lock for sure, whether or not this view was closed. */
	boolean held() {
		return !this.lost && System.nanoTime() - this.validUntilNanos < 0;
	}

	/** Whether the lock's time to live ran out, and no extension found it taken before. */
	boolean outlived() {
		return !this.lost && System.nanoTime() - this.validUntilNanos >= 0;
	}

	/**
	 * Sets the job lock's time to live on the backend to {@code ttl} from now, if this run still
	 * owns it. The lock stays unrenewed: it expires {@code ttl} from now unless extended again.
	 * @throws IllegalArgumentException if {@code ttl} is not positive
	 * @throws dev.holdfast.LockBackendException if the backend failed
	 */
	@Override
	public boolean extend(Duration ttl) {
		if (ttl.isNegative() || ttl.isZero()) {
			throw new IllegalArgumentException("ttl must be positive, was " + ttl);
		}
		if (this.closed || this.lost) {
			return false;
		}
		long start = System.nanoTime();
		if (this.locks.renew(this.lock, ttl)) {
			this.validUntilNanos = this.locks.validUntil(start, ttl);
			return true;
		}
		this.lost = true;
		logger.warn("Holdfast job '" + this.lock.name() + "' lost its lock '" + key()
				+ "': it was not held by this run any more when extended");
		this.locks.listener().leaseLost(this.lock.name(), this.locks.backendName());
		return false;
	}

	/** Ends this view of the lock; the run releases the lock when the method returns. */
	@Override
	public void close() {
		this.closed = true;
	}

	/** What the {@code locks} endpoint shows of this lock. */
	LeaseInfo info() {
		return new LeaseInfo(this.lock.name(), key(), fencingToken(), this.acquiredAt, expiresAt(), held());
	}

	@Override
	public String toString() {
		return "JobLease[" + key() + ", token " + fencingToken() + ", " + (isValid() ? "valid" : "not valid") + "]";
	}

}
