package dev.holdfast.support;

import java.time.Duration;
import java.time.Instant;

import dev.holdfast.Lease;

/**
 * A lease as the code running under it sees it: valid while the lease is and until closed;
 * closing it (try-with-resources on {@link dev.holdfast.LockContext#requireLease()}) releases
 * nothing, since the caller that took the lease releases it when that code ends. For any lease,
 * of any template; it counts no hold and needs no closing.
 */
public final class LeaseView implements Lease {

	private final Lease lease;

	private volatile boolean closed;

	private LeaseView(Lease lease) {
		this.lease = lease;
	}

	/** The view of {@code lease}. */
	public static Lease of(Lease lease) {
		return new LeaseView(lease);
	}

	@Override
	public String key() {
		return this.lease.key();
	}

	@Override
	public long fencingToken() {
		return this.lease.fencingToken();
	}

	@Override
	public Instant acquiredAt() {
		return this.lease.acquiredAt();
	}

	@Override
	public Instant expiresAt() {
		return this.lease.expiresAt();
	}

	@Override
	public boolean isValid() {
		return !this.closed && this.lease.isValid();
	}

	@Override
	public boolean extend(Duration ttl) {
		return !this.closed && this.lease.extend(ttl);
	}

	@Override
	public void close() {
		this.closed = true;
	}

	@Override
	public String toString() {
		return this.lease.toString();
	}

}
