package dev.holdfast.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;

import org.jspecify.annotations.Nullable;

import dev.holdfast.LockListener.LockObservation;
import dev.holdfast.support.ReadHolds;

/**
 * One backend lock held by this process, shared by the reentrant holds of one thread.
 */
final class HeldLease {

	enum State {

		ACTIVE, LOST, RELEASED

	}

	private final LocalLeases leases;

	private final String name;

	private final String key;

	private final String owner;

	private final long fencingToken;

	/** Whether it is renewed; a joining reader that renews turns it on (RWL-15). */
	private volatile boolean renew;

	private final Instant acquiredAt;

	private final long acquiredNanos;

	private final LockObservation observation;

	/** The local readers of a read lease (RWL-2); {@code null} for the exclusive lock. */
	private final @Nullable ReadHolds readers;

	// Plain volatile fields updated through VarHandles: no Atomic* object per lease.
	private static final VarHandle HOLDS;

	private static final VarHandle THREAD_HOLDS;

	private static final VarHandle STATE;

	private static final VarHandle TIME_TO_LIVE_LOCK;

	private static final VarHandle ANSWERED;

	private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

	static {
		try {
			MethodHandles.Lookup lookup = MethodHandles.lookup();
			HOLDS = lookup.findVarHandle(HeldLease.class, "holds", int.class);
			THREAD_HOLDS = lookup.findVarHandle(HeldLease.class, "threadHolds", int.class);
			STATE = lookup.findVarHandle(HeldLease.class, "state", State.class);
			TIME_TO_LIVE_LOCK = lookup.findVarHandle(HeldLease.class, "timeToLiveLock", Semaphore.class);
			ANSWERED = lookup.findVarHandle(HeldLease.class, "answered", CompletableFuture.class);
		}
		catch (ReflectiveOperationException ex) {
			throw new ExceptionInInitializerError(ex);
		}
	}

	private volatile int holds = 1;

	/** Holds that are bound to {@link #thread}; reentrancy ends when the last one leaves. */
	private volatile int threadHolds = 1;

	private volatile State state = State.ACTIVE;

	/**
	 * Taken while a renewal or an extend of this lease is in flight: two such requests must never
	 * overlap, or the backend may apply the older one last while the lease believes the newer. A
	 * permit, not a lock: a renewal sent without blocking gives it back on the thread its answer
	 * comes to.
	 */
	private volatile @Nullable Semaphore timeToLiveLock;

	private volatile @Nullable Thread thread;

	/**
	 * Set when the lease was released in the background and the backend has not answered yet:
	 * completes once it answered (or the release failed and was reported).
	 */
	private volatile @Nullable CompletableFuture<Void> releasing;

	/** Completes once its release was answered ({@link #answered}); created on first use, {@code DONE} once answered. */
	private volatile @Nullable CompletableFuture<Void> answered;

	/** What requests for this lease ask: at least every earlier one for a read lease (RWL-15). */
	private volatile Duration ttl;

	/** The time to live of the last confirmation, nanoseconds: renewals are due by it. */
	private volatile long confirmedTtlNanos;

	/** Start of the last successful acquire or renew request, System.nanoTime. */
	private volatile long confirmedNanos;

	/** Until when the lock is held for sure, System.nanoTime. */
	private volatile long validUntilNanos;

	/** How far after the acquisition was sent renewals reach ({@link #renewAtMostFor}). */
	private volatile long renewForNanos = Long.MAX_VALUE;

	HeldLease(LocalLeases leases, String name, String key, String owner, long fencingToken, Duration ttl,
			boolean renew, long requestStartNanos, Instant acquiredAt, LockObservation observation) {
		this(leases, name, key, owner, fencingToken, ttl, renew, requestStartNanos, acquiredAt, observation, null);
	}

	HeldLease(LocalLeases leases, String name, String key, String owner, long fencingToken, Duration ttl,
			boolean renew, long requestStartNanos, Instant acquiredAt, LockObservation observation,
			@Nullable ReadHolds readers) {
		this.leases = leases;
		this.readers = readers;
		this.name = name;
		this.key = key;
		this.owner = owner;
		this.fencingToken = fencingToken;
		this.ttl = ttl;
		this.renew = renew;
		this.acquiredAt = acquiredAt;
		this.acquiredNanos = requestStartNanos;
		this.observation = observation;
		this.thread = Thread.currentThread();
		confirmed(requestStartNanos, ttl);
	}

	/**
	 * The one permit that serialises the requests which set this lease's time to live on the
	 * backend (renewals and {@code extend}); whoever holds it sends {@link #ttl()} or replaces it,
	 * and confirms with what it sent.
	 */
	Semaphore timeToLiveLock() {
		Semaphore lock = this.timeToLiveLock;
		if (lock == null) {
			// Created on first use: most leases are released before their first renewal.
			Semaphore created = new Semaphore(1);
			lock = (Semaphore) TIME_TO_LIVE_LOCK.compareAndExchange(this, null, created);
			if (lock == null) {
				lock = created;
			}
		}
		return lock;
	}

	/**
	 * The backend confirmed ownership for {@code ttl} in a request sent at {@code startNanos}. The
	 * lease counts as valid until then minus the backend's allowance for clocks that run at
	 * different rates ({@link dev.holdfast.spi.LockBackend#clockDriftAllowance}).
	 */
	void confirmed(long startNanos, Duration ttl) {
		this.ttl = ttl;
		this.confirmedTtlNanos = ttl.toNanos();
		this.confirmedNanos = startNanos;
		this.validUntilNanos = startNanos + ttl.toNanos() - this.leases.driftNanos(ttl);
	}

	/**
	 * A join's attempt sent at {@code startNanos} with {@code ttl} was granted with this lease's
	 * token (RWL-15): it is confirmed from then, only if that ends later than what it had.
	 */
	void confirmedExtending(long startNanos, Duration ttl) {
		long until = startNanos + ttl.toNanos() - this.leases.driftNanos(ttl);
		if (until - this.validUntilNanos > 0) {
			this.confirmedTtlNanos = ttl.toNanos();
			this.confirmedNanos = startNanos;
			this.validUntilNanos = until;
		}
	}

	/**
	 * Raises what requests for this lease ask to at least {@code ttl}, with its time-to-live lock
	 * held (RWL-15); returns what they ask now.
	 */
	Duration raiseTtl(Duration ttl) {
		Duration current = this.ttl;
		if (ttl.compareTo(current) > 0) {
			this.ttl = ttl;
			return ttl;
		}
		return current;
	}

	/** Turns its renewal on (a joining reader asks for it: RWL-15); true if it was off. */
	boolean renewOn() {
		if (this.renew) {
			return false;
		}
		this.renew = true;
		return true;
	}

	/** Whether it ended: lost, released, or its last hold left (its release is starting). */
	boolean ended() {
		return !isActive() || this.holds <= 0;
	}

	boolean enterReentrant() {
		while (true) {
			int current = this.holds;
			if (current <= 0 || !isValid()) {
				return false;
			}
			if (HOLDS.compareAndSet(this, current, current + 1)) {
				THREAD_HOLDS.getAndAdd(this, 1);
				return true;
			}
		}
	}

	/**
	 * A reentrant read hold of the calling thread enters this read lease: false when the lease
	 * has no hold left or is not valid.
	 */
	boolean enterRead() {
		if (!enterReentrant()) {
			return false;
		}
		this.readers.enter(Thread.currentThread(), null);
		return true;
	}

	/** The local readers of a read lease, {@code null} for the exclusive lock. */
	@Nullable ReadHolds readers() {
		return this.readers;
	}

	/** The holds open on it: its thread's reentrant ones, or all its local readers' (RWL-2). */
	int holds() {
		return this.holds;
	}

	/** Whether it is a read lease (RWL-2). */
	boolean isShared() {
		return this.readers != null;
	}

	/** Its {@code mode} tag: {@code exclusive}, {@code permit} or {@code read} (OBS-14). */
	String mode() {
		return LockKeys.mode(this.key, isShared());
	}

	/** Leaves one hold; true when it was the last one. */
	boolean exit() {
		return (int) HOLDS.getAndAdd(this, -1) == 1;
	}

	/** Whether {@code candidate} holds it: a read lease is held by each thread with an open read hold. */
	boolean isHeldBy(Thread candidate) {
		return (this.readers != null) ? this.readers.heldBy(candidate) : this.thread == candidate;
	}

	/** Stops reentrancy from the acquiring thread, for leases that outlive the call (async). */
	void detachFromThread() {
		this.thread = null;
	}

	/**
	 * One thread-bound hold ends (closed, or detached because it outlives its call): when none is
	 * left, the acquiring thread no longer reenters, even if detached holds still keep the lock.
	 */
	void leaveThread() {
		if ((int) THREAD_HOLDS.getAndAdd(this, -1) <= 1) {
			this.thread = null;
		}
	}

	boolean markLost() {
		return STATE.compareAndSet(this, State.ACTIVE, State.LOST);
	}

	/** Marks the lease released; returns its state before (RELEASED if it was already). */
	State markReleased() {
		return (State) STATE.getAndSet(this, State.RELEASED);
	}

	/** The release in flight or answered ({@link #startReleasing}), or {@code null}. */
	@Nullable CompletableFuture<Void> releasing() {
		return this.releasing;
	}

	/** The lease was released (see {@link #markReleased()}) and its release is being sent. */
	void startReleasing(CompletableFuture<Void> done) {
		this.releasing = done;
	}

	/**
	 * Completes once its release was answered (or it was forgotten), even if that release is not
	 * sent yet: what a failed join's release of its owner waits for (RWL-18).
	 */
	CompletableFuture<Void> answered() {
		CompletableFuture<Void> created = new CompletableFuture<>();
		CompletableFuture<Void> found = (CompletableFuture<Void>) ANSWERED.compareAndExchange(this, null, created);
		return (found != null) ? found : created;
	}

	/** Its release was answered: completes {@link #answered()}. */
	void releaseAnswered() {
		CompletableFuture<Void> waiting = (CompletableFuture<Void>) ANSWERED.getAndSet(this, DONE);
		if (waiting != null) {
			waiting.complete(null);
		}
	}

	boolean isActive() {
		return this.state == State.ACTIVE;
	}

	/** Whether its holder released it (the backend may not have answered yet). */
	boolean isReleased() {
		return this.state == State.RELEASED;
	}

	boolean isValid() {
		return isActive() && System.nanoTime() - this.validUntilNanos < 0 && !this.leases.suspended();
	}

	/** How long until this lease stops counting as held for sure, in nanoseconds, whatever its state. */
	long untilExpiryNanos() {
		return Math.max(0, this.validUntilNanos - System.nanoTime());
	}

	/** When the next renewal is due: a third of the time to live after the last confirmation. */
	long renewDueNanos() {
		return this.confirmedNanos + this.confirmedTtlNanos / 3;
	}

	Duration heldFor() {
		return Duration.ofNanos(System.nanoTime() - this.acquiredNanos);
	}

	Instant expiresAt() {
		return this.leases.now().plusNanos(this.validUntilNanos - System.nanoTime());
	}

	LocalLeases leases() {
		return this.leases;
	}

	String name() {
		return this.name;
	}

	String key() {
		return this.key;
	}

	String owner() {
		return this.owner;
	}

	long fencingToken() {
		return this.fencingToken;
	}

	/** Whether the renewer renews it: a renewed lease whose last confirmation ends before its limit. */
	boolean renew() {
		return this.renew && this.confirmedNanos + this.ttl.toNanos() - this.acquiredNanos < this.renewForNanos;
	}

	/** Renewals end {@code limit} after the acquisition was sent: the last one sets the rest. */
	void renewAtMostFor(Duration limit) {
		this.renewForNanos = limit.toNanos();
	}

	/** What a renewal sent now asks for: the time to live, or what is left to the limit (ms, rounded up). */
	Duration renewalTtl() {
		long left = this.renewForNanos - (System.nanoTime() - this.acquiredNanos);
		return (left >= this.ttl.toNanos()) ? this.ttl : Duration.ofMillis(Math.max(1, (left + 999_999) / 1_000_000));
	}

	Duration ttl() {
		return this.ttl;
	}

	Instant acquiredAt() {
		return this.acquiredAt;
	}

	LockObservation observation() {
		return this.observation;
	}

	@Override
	public String toString() {
		return "Lease[" + this.key + ", token " + this.fencingToken + ", " + this.state + "]";
	}

}
