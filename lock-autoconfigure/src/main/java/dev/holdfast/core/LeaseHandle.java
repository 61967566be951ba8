package dev.holdfast.core;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicBoolean;

import dev.holdfast.Lease;

/**
 * One acquisition's view of a {@link HeldLease}: closing it leaves exactly one hold, however
 * often it is closed.
 */
final class LeaseHandle implements Lease {

	private final HeldLease lease;

	private final AtomicBoolean closed = new AtomicBoolean();

	LeaseHandle(HeldLease lease) {
		this.lease = lease;
	}

	HeldLease lease() {
		return this.lease;
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
		return !this.closed.get() && this.lease.isValid();
	}

	@Override
	public boolean extend(Duration ttl) {
		if (this.closed.get()) {
			return false;
		}
		return this.lease.template().extend(this.lease, ttl);
	}

	@Override
	public void close() {
		if (this.closed.compareAndSet(false, true) && this.lease.exit()) {
			this.lease.template().release(this.lease);
		}
	}

	@Override
	public String toString() {
		return this.lease.toString();
	}

}
