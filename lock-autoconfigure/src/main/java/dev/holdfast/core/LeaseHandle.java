package dev.holdfast.core;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

import org.jspecify.annotations.Nullable;

import dev.holdfast.LockListener.LockObservation;

/**
 * One acquisition's view of a {@link HeldLease}: closing it leaves exactly one hold, however
 * often it is closed.
 */
final class LeaseHandle implements EngineLease {

	private final HeldLease lease;

	private static final int BOUND = 0;

	private static final int DETACHED = 1;

	private static final int CLOSED = 2;

	private static final AtomicIntegerFieldUpdater<LeaseHandle> STATE = AtomicIntegerFieldUpdater
		.newUpdater(LeaseHandle.class, "state");

	/** BOUND to the acquiring thread, DETACHED from it (outlives its call), or CLOSED. */
	private volatile int state = BOUND;

	/** For a read hold (RWL-2): the thread it is bound to and its own observation; else {@code null}. */
	private final @Nullable Thread reader;

	private final @Nullable LockObservation readObservation;

	LeaseHandle(HeldLease lease) {
		this.lease = lease;
		this.reader = null;
		this.readObservation = null;
	}

	/**
	 * A read hold of {@code lease} by the calling thread, which entered it with
	 * {@code observation} ({@code null} for a reentrant hold).
	 */
	LeaseHandle(HeldLease lease, @Nullable LockObservation observation) {
		this.lease = lease;
		this.reader = Thread.currentThread();
		this.readObservation = observation;
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
		return this.state != CLOSED && this.lease.isValid();
	}

	@Override
	public boolean extend(Duration ttl) {
		return this.state != CLOSED && this.lease.leases().extend(this.lease, ttl);
	}

	@Override
	public LockObservation observation() {
		return (this.readObservation != null) ? this.readObservation : this.lease.observation();
	}

	/** This hold outlives the call that took it: the acquiring thread stops reentering with it. */
	@Override
	public void detachFromThread() {
		if (STATE.compareAndSet(this, BOUND, DETACHED)) {
			if (this.reader != null) {
				this.lease.readers().leaveThread(this.reader);
			}
			this.lease.leaveThread();
		}
	}

	@Override
	public void close() {
		if (leave()) {
			this.lease.leases().releases().release(this.lease);
		}
	}

	@Override
	public void forget() {
		if (leave()) {
			this.lease.leases().releases().forget(this.lease);
		}
	}

	@Override
	public void renewAtMostFor(Duration limit) {
		this.lease.renewAtMostFor(limit);
	}

	@Override
	public void markLost(String reason) {
		this.lease.leases().lost(this.lease, reason);
	}

	@Override
	public void markLost(String reason, Executor reports) {
		HeldLease lost = this.lease;
		if (lost.markLost()) {
			reports.execute(() -> lost.leases().reportLost(lost, reason));
		}
	}

	/** Like {@link #close()}, with the backend call not blocking where the backend allows it. */
	CompletionStage<Void> closeAsync() {
		return leave() ? this.lease.leases().releases().releaseAsync(this.lease) : CompletableFuture.completedFuture(null);
	}

	/** Leaves this hold, once; true when it was the lease's last hold. */
	private boolean leave() {
		int previous = STATE.getAndSet(this, CLOSED);
		if (previous == CLOSED) {
			return false;
		}
		if (previous == BOUND) {
			if (this.reader != null) {
				this.lease.readers().leaveThread(this.reader);
			}
			this.lease.leaveThread();
		}
		if (this.readObservation != null) {
			this.lease.readers().closed(this.readObservation);
			this.readObservation.released();
		}
		return this.lease.exit();
	}

	@Override
	public String toString() {
		return this.lease.toString();
	}

}
