package dev.holdfast.core;

import java.time.Duration;
import java.time.Instant;

import dev.holdfast.Lease;

/**
 * A lease as the code running under it sees it ({@link EngineLease#viewOf}): valid while the lease
 * is and until the view is closed; closing it releases nothing, since the code that took the
 * lease releases it when the method or publisher ends.
 */
final class LeaseView implements Lease {

	private final Lease lease;

	private volatile boolean closed;

	LeaseView(Lease lease) {
		this.lease = lease;
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
