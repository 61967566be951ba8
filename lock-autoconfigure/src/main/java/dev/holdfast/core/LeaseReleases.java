package dev.holdfast.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

import org.jspecify.annotations.Nullable;

import dev.holdfast.LockListener;
import dev.holdfast.spi.AnnouncedReleases;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.LockBackend;

/**
 * How a {@link DefaultLockTemplate} gives its leases back to the backend.
 * <p>
 * <b>In the background</b> (an {@link AsyncLockBackend}, with
 * {@link LockSettings#releaseInBackground()} on): the last {@code close()} of a lease sends the
 * owner-checked release and returns without waiting for the answer. Until the backend answered,
 * the lease stays in the template's map of held leases, marked as releasing (not valid, not
 * renewed, not listed), so that this process knows the release is in flight:
 * <ul>
 * <li>an acquisition of the same key from this process that finds the lock held while that
 * release is in flight waits for the release (never past the released lease's expiry) and
 * tries again at once; on Redis it usually does not
 * even find it held, because its request travels behind the release on the same connection;</li>
 * <li>a release that fails is reported as a synchronous one is: WARN naming the (masked) key,
 * {@link LockListener#releaseFailed}, and the lock expires on the backend after its time to
 * live;</li>
 * <li>at most {@value #MAX_IN_FLIGHT} releases are in flight per template: beyond that,
 * {@code close()} waits for its own release's answer, as with the background off;</li>
 * <li>a graceful shutdown and {@link DefaultLockTemplate#close()} wait for releases in
 * flight.</li>
 * </ul>
 * No thread is involved: the backend's own I/O completes the release. Backends without a
 * non-blocking release release on the caller's thread, and their lease is marked as releasing
 * in the same way until the call returns.
 */
final class LeaseReleases {

	/** Releases in flight per template beyond which {@code close()} waits for its own. */
	static final int MAX_IN_FLIGHT = 1024;

	private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

	private final DefaultLockTemplate template;

	private final LockBackend backend;

	private final @Nullable AsyncLockBackend async;

	private final boolean background;

	private final LockListener listener;

	private final Map<String, HeldLease> held;

	private final AtomicInteger inFlight = new AtomicInteger();

	/** With a backend that hands released locks to recorded waiters: this template's waiters. */
	private final @Nullable HandoffWaiters handoff;

	LeaseReleases(DefaultLockTemplate template, LockBackend backend, boolean background, LockListener listener,
			Map<String, HeldLease> held, @Nullable HandoffWaiters handoff) {
		this.handoff = handoff;
		this.template = template;
		this.backend = backend;
		this.async = (backend instanceof AsyncLockBackend asyncBackend) ? asyncBackend : null;
		this.background = background && this.async != null;
		this.listener = listener;
		this.held = held;
	}

	/** Whether {@link #release} returns before the backend answered. */
	boolean inBackground() {
		return this.background;
	}

	/** The last hold of {@code lease} ended ({@code Lease.close()}). */
	void release(HeldLease lease) {
		if (!this.background) {
			releaseNow(lease, true);
			return;
		}
		CompletableFuture<Void> done = send(lease);
		if (done != null && this.inFlight.get() > MAX_IN_FLIGHT) {
			// Back-pressure: this caller waits for its own release, as without the background.
			try {
				done.get();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			catch (ExecutionException ex) {
				// Never: the future completes normally, failures are reported.
			}
		}
	}

	/**
	 * Releases {@code lease} without blocking where the backend can; the stage completes when the
	 * backend answered, normally also when the release failed (it was reported).
	 */
	CompletionStage<Void> releaseAsync(HeldLease lease) {
		if (this.async == null) {
			releaseNow(lease, true);
			return DONE;
		}
		CompletableFuture<Void> done = send(lease);
		return (done != null) ? done : DONE;
	}

	/**
	 * Releases {@code lease} on the calling thread; {@code onBackend} false only forgets it locally.
	 * Until the backend answered, the lease stays in the map of held leases marked as releasing,
	 * as a release in the background does: one rule for "this process still holds the key".
	 */
	void releaseNow(HeldLease lease, boolean onBackend) {
		if (!lease.markReleased()) {
			return;
		}
		CompletableFuture<Void> done = new CompletableFuture<>();
		lease.startReleasing(done);
		this.inFlight.incrementAndGet();
		RuntimeException failure = null;
		boolean announced = false;
		HandoffWaiters.Waiter next = null;
		boolean handedOn = false;
		try {
			if (onBackend) {
				HandoffWaiters waiters = this.handoff;
				if (waiters != null) {
					next = nextWaiter(waiters, lease);
					handedOn = waiters.backend().release(lease.key(), lease.owner(), (next != null) ? next.owner : null,
							(next != null) ? next.ttl : null, waiters.recordFor()) && next != null;
				}
				// This template's own subscription must listen: another template's on the same
				// backend delivers the announcement to that template only.
				else if (this.backend instanceof AnnouncedReleases events && this.template.releaseEventsListening()
						&& events.announcesReleases() && events.drawsNextInstance()) {
					if (this.template.wantedLocally(lease.key())) {
						// A thread of this process wants the key: the backend draws between this process
						// and another that waits, so its racer starts from the answer.
						events.releaseWanted(lease.key(), lease.owner());
					}
					else {
						this.backend.release(lease.key(), lease.owner());
					}
				}
				else if (this.backend instanceof AnnouncedReleases events && this.template.releaseEventsListening()
						&& events.announcesReleases() && this.template.awaitAnnouncement(lease.key())) {
					// A racer of this process waits for the key: it starts from the announcement,
					// with the other processes' racers.
					announced = events.releaseAnnounced(lease.key(), lease.owner());
				}
				else {
					this.backend.release(lease.key(), lease.owner());
				}
			}
		}
		catch (RuntimeException ex) {
			failure = ex;
		}
		finally {
			answered(lease, failure, done, announced, next, handedOn);
		}
	}

	/**
	 * This process's next waiter for the released {@code lease}'s key, to name in its release.
	 * The full fence orders the lease's {@code markReleased} (a volatile read-modify-write) before
	 * the read of the racers map, whose bin read is only an acquire load: a racer registers
	 * itself there and then reads the lease's validity (Racer.race), so either it sees the lease
	 * released and attempts, or this release names it.
	 */
	private static HandoffWaiters.@Nullable Waiter nextWaiter(HandoffWaiters waiters, HeldLease lease) {
		VarHandle.fullFence();
		return waiters.localWaiter(lease.key(), lease.validUntilNanos());
	}

	/**
	 * This process's release of {@code key} in flight now, to be looked at before an attempt is
	 * sent and handed to {@link #awaitOwnRelease} or {@link #ownRelease} after it found the key
	 * held; {@code null} if there is none or the backend has no non-blocking release.
	 */
	@Nullable HeldLease releaseBeforeAttempt(String key) {
		return (this.async != null) ? releasing(key) : null;
	}

	/**
	 * After an attempt found {@code key} held: if this process's own release of it was in flight
	 * when the attempt was sent ({@code before}) or is now, waits (interruptibly) until that
	 * release is answered or the released lease would have expired on the backend anyway,
	 * whichever comes first. A release in flight when the attempt was sent counts even if it was
	 * answered since: the backend may have run the attempt before it (a {@code NOSCRIPT} retry).
	 * @return whether a release of {@code key} was in flight: the caller may try again at once
	 */
	boolean awaitOwnRelease(String key, @Nullable HeldLease before) throws InterruptedException {
		HeldLease lease = ownReleaseLease(key, before);
		if (lease == null) {
			return false;
		}
		CompletableFuture<Void> done = lease.releasing();
		if (done != null && !done.isDone()) {
			try {
				done.get(lease.untilExpiryNanos(), TimeUnit.NANOSECONDS);
			}
			catch (ExecutionException | TimeoutException ex) {
				// Failures were reported by the release; past the released lease's expiry the
				// backend's copy has expired too (or is about to: one more attempt, then no more).
			}
		}
		return true;
	}

	/**
	 * This process's release of {@code key} that was in flight when the attempt was sent
	 * ({@code before}) or is now, as a stage that completes when it is answered or when the
	 * released lease would have expired on the backend anyway (a release that is never answered
	 * is not waited for longer than that); {@code null} if there is none, or that lease has
	 * expired. Only on a backend with a non-blocking release: there an acquisition is ordered
	 * behind the release it waits for. On the others (JDBC), a waiter woken by its own process's
	 * release would win nearly every handoff, because the other instances' waiters hear nothing
	 * and poll: it backs off like them instead.
	 */
	@Nullable CompletableFuture<Void> ownRelease(String key, @Nullable HeldLease before) {
		HeldLease lease = ownReleaseLease(key, before);
		if (lease == null) {
			return null;
		}
		CompletableFuture<Void> done = lease.releasing();
		if (done == null) {
			return null;
		}
		if (done.isDone()) {
			return DONE;
		}
		return done.copy().completeOnTimeout(null, lease.untilExpiryNanos(), TimeUnit.NANOSECONDS);
	}

	private @Nullable HeldLease ownReleaseLease(String key, @Nullable HeldLease before) {
		if (this.async == null) {
			return null;
		}
		HeldLease lease = (before != null) ? before : releasing(key);
		return (lease != null && lease.untilExpiryNanos() > 0) ? lease : null;
	}

	/** The lease of {@code key} whose release the backend has not answered yet, or {@code null}. */
	@Nullable HeldLease releasing(String key) {
		HeldLease lease = this.held.get(key);
		CompletableFuture<Void> done = (lease != null) ? lease.releasing() : null;
		return (done != null && !done.isDone()) ? lease : null;
	}

	/** Releases sent and not answered yet. */
	int inFlight() {
		return this.inFlight.get();
	}

	/**
	 * Waits until no release is in flight, at most {@code timeout}.
	 * @return whether none is in flight any more
	 */
	boolean awaitInFlight(Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (this.inFlight.get() > 0) {
			CompletableFuture<Void> next = null;
			for (HeldLease lease : this.held.values()) {
				CompletableFuture<Void> done = lease.releasing();
				if (done != null && !done.isDone()) {
					next = done;
					break;
				}
			}
			long remaining = deadline - System.nanoTime();
			if (remaining <= 0) {
				return false;
			}
			try {
				if (next != null) {
					next.get(remaining, TimeUnit.NANOSECONDS);
				}
				else {
					// Sent, not yet visible in the map (or answered, not yet counted down).
					TimeUnit.MILLISECONDS.sleep(1);
				}
			}
			catch (ExecutionException | TimeoutException ex) {
				// Re-checked by the loop.
			}
		}
		return true;
	}

	/** Sends the release of {@code lease}; {@code null} if it was released already. */
	private @Nullable CompletableFuture<Void> send(HeldLease lease) {
		AsyncLockBackend nonBlocking = this.async;
		if (nonBlocking == null || !lease.markReleased()) {
			return null;
		}
		Release done = new Release(lease);
		// Still in the map of held leases, marked as releasing, until the backend answered.
		lease.startReleasing(done);
		this.inFlight.incrementAndGet();
		try {
			HandoffWaiters waiters = this.handoff;
			if (waiters != null) {
				// This process's next waiter for the key, which may not have attempted yet, is drawn
				// like any recorded waiter.
				HandoffWaiters.Waiter next = nextWaiter(waiters, lease);
				done.next = next;
				waiters.backend().releaseAsync(lease.key(), lease.owner(), (next != null) ? next.owner : null,
						(next != null) ? next.ttl : null, waiters.recordFor(), done);
			}
			else {
				nonBlocking.releaseAsync(lease.key(), lease.owner(), done);
			}
		}
		catch (Throwable ex) {
			// Whatever it was, the lease must not stay "releasing" with its stage never completed.
			done.accept(null, ex);
		}
		return done;
	}

	/**
	 * A release sent in the background: the backend's callback, and the stage that completes
	 * once the backend answered. One object per release, on top of the backend's own.
	 */
	private final class Release extends CompletableFuture<Void>
			implements BiConsumer<@Nullable Boolean, @Nullable Throwable> {

		private static final VarHandle ANSWERED;

		static {
			try {
				ANSWERED = MethodHandles.lookup().findVarHandle(Release.class, "answered", boolean.class);
			}
			catch (ReflectiveOperationException ex) {
				throw new ExceptionInInitializerError(ex);
			}
		}

		private final HeldLease lease;

		/** The waiter the release named, set before it is sent (the answer reads it after). */
		private HandoffWaiters.@Nullable Waiter next;

		private volatile boolean answered;

		Release(HeldLease lease) {
			this.lease = lease;
		}

		@Override
		public void accept(@Nullable Boolean released, @Nullable Throwable ex) {
			// Once, even if a backend both answered and threw.
			if (ANSWERED.compareAndSet(this, false, true)) {
				HandoffWaiters.Waiter named = this.next;
				answered(this.lease, ex, this, false, named,
						ex == null && named != null && Boolean.TRUE.equals(released));
			}
		}

	}

	/**
	 * {@code announced}: whether the backend announced the release to this process's racer too;
	 * {@code next}: the waiter the release named to a backend that hands released locks to
	 * recorded waiters; {@code handedOn}: whether the backend answered that it handed the lock on
	 * (to {@code next} or another recorded waiter).
	 */
	private void answered(HeldLease lease, @Nullable Throwable ex, CompletableFuture<Void> done, boolean announced,
			HandoffWaiters.@Nullable Waiter next, boolean handedOn) {
		try {
			this.held.remove(lease.key(), lease);
			if (ex != null && next != null) {
				// The backend may have run the release and handed the lock to the named waiter, and the
				// answer, the grant's only copy, was lost (a timeout, a reset, an interrupted call).
				// A waiter still waiting is woken below and finds the lock its own with its next
				// attempt; one that has left meanwhile (its withdrawal may have reached the backend
				// before this release) never will: withdraw it again, owner-checked and idempotent,
				// which hands such a lock on.
				next.releaseFailed();
			}
			this.template.releasedLocally(lease, announced, handedOn);
			if (ex != null) {
				failed(lease, ex);
			}
			ended(lease);
		}
		finally {
			this.inFlight.decrementAndGet();
			done.complete(null);
		}
	}

	private void failed(HeldLease lease, Throwable ex) {
		RuntimeException failure = this.template.releaseFailed(lease, ex);
		this.listener.releaseFailed(lease.name(), this.backend.name(), failure);
	}

	private void ended(HeldLease lease) {
		lease.observation().released();
		if (this.listener != LockListener.NONE) {
			this.listener.released(lease.name(), this.backend.name(), lease.heldFor());
		}
	}

}
