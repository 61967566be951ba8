package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.jspecify.annotations.Nullable;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockListener;
import dev.holdfast.LockListener.LockObservation;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AnnouncedReleases;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.SharedLocks;
import dev.holdfast.spi.WaitQueue;
import dev.holdfast.spi.WaiterHandoff;

/**
 * How a template acquires: one state machine ({@link Acquisition}, the rules) with two thin
 * drivers, the blocking one here (attempts and waits on the caller's thread) and
 * {@link NonBlockingAcquisition} (each attempt a callback, each wait an event or a timer). Waiting
 * acquisitions of a key queue in one {@linkplain Lines line}; only its head talks to the backend.
 * The rules and the tests that pin them: docs/DESIGN.md, "Acquisition" (ACQ-1 to ACQ-7).
 */
final class Acquisitions {

	static final long MIN_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

	/** The longest pause between attempts while release events are not delivered yet. */
	static final long NOT_LISTENING_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

	final LockBackend backend;

	final @Nullable AsyncLockBackend async;

	final @Nullable WaiterHandoff handoff;

	final @Nullable WaitQueue queue;

	/** Read holds (RWL-*), where the backend gives them. */
	final @Nullable SharedLocks shared;

	/** Where a waiting exclusive attempt records a waiting writer (RWL-1): a SharedLocks keeping no waiters otherwise. */
	final @Nullable SharedLocks waitingWriters;

	final Lines lines;

	final LocalLeases leases;

	final BackgroundCalls background;

	final Failures failures;

	final LockListener listener;

	final OwnerTokens owners;

	final long pollNanos;

	/** How long a waiter's record lasts without another attempt: two poll intervals. */
	final long recordForNanos;

	final Executor executor = ForkJoinPool.commonPool();

	volatile boolean draining;

	/** A backend that may draw between instances at a release ({@link Acquisition#heldHereNanos}). */
	final @Nullable AnnouncedReleases drawing;

	/** Waiting acquisitions that have not ended yet (left their line, withdrawal submitted). */
	final AtomicInteger waiting = new AtomicInteger();

	Acquisitions(LockBackend backend, Lines lines, LocalLeases leases, BackgroundCalls background, Failures failures,
			LockListener listener, Duration pollInterval, String instanceName) {
		this.owners = new OwnerTokens(instanceName);
		this.backend = backend;
		this.async = (backend instanceof AsyncLockBackend asyncBackend) ? asyncBackend : null;
		this.handoff = (backend instanceof WaiterHandoff waiterHandoff) ? waiterHandoff : null;
		this.queue = (backend instanceof WaitQueue waitQueue) ? waitQueue : null;
		this.shared = (backend instanceof SharedLocks sharedLocks) ? sharedLocks : null;
		this.waitingWriters = (this.handoff == null && this.queue == null) ? this.shared : null;
		this.drawing = (backend instanceof AnnouncedReleases announced) ? announced : null;
		this.lines = lines;
		this.leases = leases;
		this.background = background;
		this.failures = failures;
		this.listener = listener;
		this.pollNanos = pollInterval.toNanos();
		this.recordForNanos = pollInterval.toNanos() * 2;
	}

	/**
	 * Acquires {@code key} on the calling thread, waiting at most {@code wait}; a permit call's
	 * wait on one slot ({@code slotWake}) also ends when a release of another slot wakes it (SEM-8).
	 * @return the registered lease, or {@code null} if the lock stayed held for the wait time
	 * @throws InterruptedException if the thread was interrupted while waiting or during a backend call
	 * @throws LockBackendException if the backend failed, or the template is shutting down
	 */
	@Nullable HeldLease acquire(String name, String key, Duration ttl, boolean renew, Duration wait,
			@Nullable SlotWake slotWake) throws InterruptedException {
		Blocking acquisition = new Blocking(name, key, ttl, renew, wait,
				this.listener.acquiring(name, key, this.failures.backendName()), false);
		acquisition.slotWake = slotWake;
		return run(acquisition);
	}

	/**
	 * Takes a read hold of {@code key} on the calling thread (RWL-2), as {@link #acquire} does:
	 * the hold, in this template's read lease of the key, or {@code null}.
	 */
	@Nullable LeaseHandle acquireRead(String name, String key, Duration ttl, boolean renew, Duration wait)
			throws InterruptedException {
		Blocking acquisition = new Blocking(name, key, ttl, renew, wait,
				this.listener.acquiringRead(name, key, this.failures.backendName()), true);
		HeldLease lease = run(acquisition);
		if (lease == null) {
			return null;
		}
		LeaseHandle hold = new LeaseHandle(lease, acquisition.observation);
		if (acquisition.coverLeaseTime) {
			try {
				// False: the lease was lost (reported to this hold too), as a reentry's (ENG-3).
				this.leases.coversLeaseTime(lease, ttl);
			}
			catch (RuntimeException ex) {
				hold.close();
				throw ex;
			}
		}
		return hold;
	}

	private @Nullable HeldLease run(Blocking acquisition) throws InterruptedException {
		String name = acquisition.name;
		LockObservation observation = acquisition.observation;
		try {
			HeldLease lease = acquisition.run();
			if (lease == null) {
				observation.notAcquired();
				this.listener.notAcquired(name, this.failures.backendName(), acquisition.mode(), acquisition.waited());
			}
			else if (this.listener != LockListener.NONE) {
				this.listener.acquired(name, this.failures.backendName(), acquisition.mode(), acquisition.waited());
			}
			return lease;
		}
		catch (InterruptedException ex) {
			observation.cancelled();
			throw ex;
		}
		catch (LockBackendException ex) {
			observation.failed(ex);
			this.listener.failed(name, this.failures.backendName(), acquisition.mode(), acquisition.waited(), ex);
			throw ex;
		}
		catch (RuntimeException | Error ex) {
			observation.failed(ex);
			throw ex;
		}
	}

	/**
	 * Acquires {@code key} without blocking (an {@link AsyncLockBackend} only): the future
	 * completes with a lease bound to no thread, with {@code null} if the lock stayed held for
	 * the wait time, or exceptionally; cancelling it ends the acquisition.
	 */
	CompletableFuture<@Nullable Lease> acquireAsync(String name, String key, Duration ttl, boolean renew,
			Duration wait) {
		LockObservation observation = this.listener.acquiring(name, key, this.failures.backendName());
		NonBlockingAcquisition acquisition = new NonBlockingAcquisition(this, name, key, ttl, renew, wait,
				observation);
		acquisition.start();
		return acquisition.result;
	}

	/**
	 * Refuses new acquisitions and ends the waiting ones (they fail as shutting down, leave their
	 * lines and withdraw), or takes acquisitions again.
	 */
	void draining(boolean draining) {
		this.draining = draining;
		if (draining) {
			this.lines.wakeAll();
		}
	}

	boolean isDraining() {
		return this.draining;
	}

	/**
	 * Waits until every waiting acquisition has ended (and submitted its withdrawal), at most
	 * {@code timeout}: a shutdown then waits for those withdrawals as for releases.
	 * @return whether none is left
	 */
	boolean awaitWaitersEnded(Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (this.waiting.get() > 0) {
			if (deadline - System.nanoTime() <= 0) {
				return false;
			}
			TimeUnit.MILLISECONDS.sleep(1);
		}
		return true;
	}

	LockBackendException shuttingDown(String key) {
		return new LockBackendException(
				"Holdfast is shutting down: lock '" + this.failures.shown(key) + "' was not acquired", null);
	}

	static long jitter(long nanos) {
		return nanos / 2 + ThreadLocalRandom.current().nextLong(nanos / 2 + 1);
	}

	/** The blocking driver: attempts and waits on the caller's thread. */
	private final class Blocking extends Acquisition {

		private final Semaphore wakeups = new Semaphore(0);

		/** The hold entered a read lease another reader registered: its lease time is covered as on reentry (RWL-16). */
		boolean coverLeaseTime;

		Blocking(String name, String key, Duration ttl, boolean renew, Duration wait, LockObservation observation,
				boolean shared) {
			super(Acquisitions.this, name, key, ttl, renew, wait, observation, shared);
		}

		@Override
		void wake() {
			this.wakeups.release();
		}

		@Nullable HeldLease run() throws InterruptedException {
			boolean took = false;
			boolean threw = false;
			try {
				if (this.waits && !join() && !awaitHead()) {
					return null;
				}
				while (true) {
					if (Thread.interrupted()) {
						throw new InterruptedException();
					}
					if (Acquisitions.this.draining && this.waits) {
						throw shuttingDown(this.key);
					}
					long heldHere = heldHereNanos();
					if (heldHere > 0) {
						if (slotReleased()) {
							return null;
						}
						this.wakeups.tryAcquire(heldHere, TimeUnit.NANOSECONDS);
						continue;
					}
					// Wake-ups from now on end the next wait: none is lost while the attempt is in flight.
					this.wakeups.drainPermits();
					HeldLease before = Acquisitions.this.leases.releaseInFlight(this.key);
					nextAttempt();
					long sent = System.nanoTime();
					AcquireResult result;
					// A local reader not yet holding sends the shared attempt with its read lease's owner (RWL-2).
					HeldLease joining = this.shared ? readLease() : null;
					// A join never asks a shorter ttl for the lease's owner than its holders did (RWL-15).
					Duration ttl = (joining != null) ? Acquisitions.this.leases.joinTtl(joining, this.ttl) : this.ttl;
					try {
						if (this.shared) {
							String owner = (joining != null) ? joining.owner() : this.owner;
							sent = System.nanoTime();
							if (Acquisitions.this.queue != null) {
								WaitQueue.Outcome outcome = Acquisitions.this.shared.acquireShared(this.key, owner, ttl,
										Duration.ofNanos(Math.max(0, this.deadline - sent)));
								result = outcome.result();
								sent = outcome.confirmedNanos();
							}
							else {
								result = Acquisitions.this.shared.tryAcquireShared(this.key, owner, ttl,
										this.waits ? recordFor() : Duration.ZERO);
							}
						}
						else if (Acquisitions.this.queue != null) {
							WaitQueue.Outcome outcome = Acquisitions.this.queue.acquire(this.key, this.owner, this.ttl,
									Duration.ofNanos(Math.max(0, this.deadline - sent)));
							result = outcome.result();
							sent = outcome.confirmedNanos();
						}
						else {
							result = this.records
									? Acquisitions.this.handoff.tryAcquireWaiting(this.key, this.owner, this.ttl, recordFor())
									: (this.waits && Acquisitions.this.waitingWriters != null)
											? Acquisitions.this.waitingWriters.tryAcquireAsWaitingWriter(this.key,
													this.owner, this.ttl, recordFor())
											: Acquisitions.this.backend.tryAcquire(this.key, this.owner, this.ttl);
						}
					}
					catch (RuntimeException ex) {
						// A join's owner is released only if its lease ended: other local readers hold it (RWL-15),
						// and after the lease's own release (RWL-18).
						LockBackendException failure = failed(ex, (joining == null) ? this.owner : null);
						if (joining != null && joining.ended() && Acquisitions.this.queue == null) {
							releaseOwnerAfterItsRelease(joining, false);
						}
						if (Thread.interrupted()) {
							// Not the backend's failure: those behind in the line carry on.
							this.failure = null;
							InterruptedException interrupted = new InterruptedException(
									"Interrupted during the " + Acquisitions.this.failures.backendName() + " backend's acquire call");
							interrupted.initCause(failure);
							throw interrupted;
						}
						throw failure;
					}
					if (result.acquired()) {
						HeldLease lease = this.shared ? tookRead(joining, result.fencingToken(), sent, ttl)
								: took(result.fencingToken(), sent);
						if (lease == null) {
							// A join that did not enter: attempted again with a new owner within the wait (ACQ-1).
							if (!this.waits || this.deadline - System.nanoTime() <= 0) {
								return null;
							}
							continue;
						}
						took = true;
						return lease;
					}
					if (Acquisitions.this.queue != null) {
						return null;
					}
					CompletableFuture<Void> own = ownRelease(before);
					if (own != null) {
						try {
							own.get();
						}
						catch (ExecutionException ex) {
							// Failures were reported by the release.
						}
						continue;
					}
					long sleep = pauseAfter(result);
					// A permit call woken for another slot ends its wait here (SEM-8).
					if (sleep == 0 || slotReleased()) {
						return null;
					}
					// Woken, for its own slot or another (SEM-8): it attempts its own first, which a
					// reservation for it or a free slot grants; refused, it ends above.
					this.wakeups.tryAcquire(sleep, TimeUnit.NANOSECONDS);
				}
			}
			catch (InterruptedException | RuntimeException ex) {
				// Interrupted, draining or failed: a wake for another slot it holds passes on (SEM-8).
				threw = true;
				throw ex;
			}
			finally {
				end(took, threw);
			}
		}

		/** This template's valid read lease of the key, which a local reader joins (RWL-2), or {@code null}. */
		private @Nullable HeldLease readLease() {
			HeldLease lease = Acquisitions.this.leases.get(this.key);
			return (lease != null && lease.isShared() && lease.isValid()) ? lease : null;
		}

		/**
		 * The backend granted a read hold: the calling thread's hold in the read lease it joined
		 * (RWL-15), or in the one registered now (RWL-16); {@code null} to attempt again with a new
		 * owner, when the join did not enter (the lease's owner given back if the lease ended).
		 */
		private @Nullable HeldLease tookRead(@Nullable HeldLease joining, long token, long sent, Duration sentTtl) {
			LocalLeases leases = Acquisitions.this.leases;
			if (joining != null) {
				HeldLease lease = leases.joined(joining, token, sent, sentTtl, this.renew, this.observation);
				if (lease == null && joining.ended()) {
					releaseOwnerAfterItsRelease(joining, true);
				}
				return lease;
			}
			HeldLease lease = leases.registerShared(this.name, this.key, this.owner, token, this.ttl, this.renew, sent,
					this.observation);
			if (lease.owner() != this.owner) {
				// Another local reader registered one first: this hold is its, ours is given back.
				Acquisitions.this.background.giveBack(this.key, this.owner);
				this.coverLeaseTime = true;
			}
			return lease;
		}

		/**
		 * Releases the owner of {@code lease}, which ended before a join's attempt with it was granted
		 * ({@code granted}: a give-back) or failed with an unknown outcome (RWL-18): once the lease's own
		 * release answered, so that a granted one never makes it find its owner gone; at once if the
		 * lease was lost and not released; if its release is not sent yet, a granted one not at all
		 * (sent after the grant, that release removes the owner), a failed one once it answered.
		 */
		private void releaseOwnerAfterItsRelease(HeldLease lease, boolean granted) {
			CompletableFuture<Void> release = lease.releasing();
			CompletableFuture<Void> after;
			if (release != null) {
				after = release;
			}
			else if (!lease.isActive() && !lease.isReleased()) {
				after = CompletableFuture.completedFuture(null);
			}
			else if (granted) {
				return;
			}
			else {
				after = lease.answered();
			}
			if (granted) {
				Acquisitions.this.background.giveBackAfter(after, this.key, lease.owner());
			}
			else {
				Acquisitions.this.background.releaseUnknownOutcomeAfter(after, this.key, lease.owner());
			}
		}

		/** Waits behind the line's head until it is the head, or the deadline passed (false). */
		private boolean awaitHead() throws InterruptedException {
			while (!becameHead()) {
				if (Acquisitions.this.draining) {
					throw shuttingDown(this.key);
				}
				LockBackendException ahead = this.failure;
				if (ahead != null) {
					throw ahead;
				}
				long left = this.deadline - System.nanoTime();
				if (left <= 0 || slotReleased()) {
					return false;
				}
				this.wakeups.tryAcquire(left, TimeUnit.NANOSECONDS);
			}
			return true;
		}

	}

}
