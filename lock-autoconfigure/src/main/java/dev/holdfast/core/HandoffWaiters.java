package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;
import java.util.function.ToLongFunction;

import org.jspecify.annotations.Nullable;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.WaiterHandoff;

/**
 * The waiting acquisitions of one template on a {@link WaiterHandoff} backend, by owner token:
 * each records itself (owner and lease time) with its refused attempts, the backend's release
 * makes one recorded waiter the holder and announces the grant with its fencing token, and this
 * class hands that lock to the acquisition it names, which returns it without another call.
 * <p>
 * One state per waiter, changed atomically: {@code WAITING -> ASSIGNED} (a grant with a token
 * arrived: the backend made it the holder), {@code -> TAKEN} when the acquisition returned the
 * lock (by the grant, {@link Waiter#takeGranted}, or by an attempt, {@link Waiter#took}; whichever
 * comes second finds {@code TAKEN} and does nothing), and {@code WAITING or ASSIGNED -> GONE}
 * when the acquisition ends without the lock (timeout, interrupt, cancel, failure), which then
 * withdraws it on the backend: the record goes and a lock handed to it is handed on. {@code GONE}
 * is final and owner tokens are never reused, so a withdrawn owner never uses its lock, and a
 * waiter that took the lock never withdraws. A grant for a waiter that is gone (found in the map
 * as it leaves, or one of the last 64 that gave up) is handed on at once; a grant for any other
 * owner not waiting here is ignored: never a withdrawal by owner of a lock that owner may have
 * taken and not yet registered. A lease taken by a grant starts no later than the release that
 * set the lock's expiry: at the waiter's creation, moved to the send time of a refused attempt
 * (or of a release that recorded it) only if that refusal was answered less than one lease time
 * after the current start (one answered later may have run after a lock handed to this waiter
 * expired unused, whose grant may still be on its way); if the start is more than a third of the
 * lease time ago, the next attempt acquires the lock again instead (idempotent for its holder).
 * {@code GRANTED} is the tokenless grant of a record of an earlier version, or of a backend that
 * has replicas acknowledge each acquisition: the lock is only reserved, the next attempt claims
 * it.
 * <p>
 * The blocking path's waiter of a key (one per key: the local gate's head) may be created ahead
 * of its racer: when a racer takes the lock while other threads of this process queue for the
 * key, a <em>successor</em> is registered for the key, and the release of that lock records it
 * with its lease time before the draw
 * ({@link WaiterHandoff#release(String, String, String, Duration, Duration)}), so that this
 * process's next waiter is drawn as often as another process's, even when the critical section
 * ends before that thread has run. The next racer of the key adopts it; if none does (the queue
 * emptied), or it asks for another lease time, it is withdrawn.
 * <p>
 * One entry per waiting acquisition (no cap of its own): an entry lives from the waiter's
 * registration to the end of its acquisition (or, for
 * a successor nobody adopts, to the moment the key's local queue empties), on every exit path.
 */
final class HandoffWaiters {

	private static final int WAITING = 0;

	private static final int GRANTED = 1;

	private static final int GONE = 2;

	private static final int TAKEN = 3;

	/** A grant with a fencing token: the backend made this waiter the holder; not yet returned. */
	private static final int ASSIGNED = 4;

	private static final Runnable NOBODY = () -> {
	};

	private final WaiterHandoff backend;

	private final OwnerTokens owners;

	/** How long a record lasts without another attempt: two poll intervals. */
	private final Duration recordFor;

	private final ConcurrentHashMap<String, Waiter> waiters = new ConcurrentHashMap<>();

	/**
	 * Owners of the last {@value #RECENTLY_GONE} waiters that gave up (state {@code GONE}, final),
	 * oldest overwritten: a grant for one of them is handed on at once. Only liveness depends on
	 * it (a grant for a gone owner that rotated out leaves the lock to its lease time); an owner
	 * that took its lock is never in it.
	 */
	private static final int RECENTLY_GONE = 64;

	private final AtomicReferenceArray<String> recentlyGone = new AtomicReferenceArray<>(RECENTLY_GONE);

	private final AtomicInteger recentlyGoneNext = new AtomicInteger();

	/** The blocking path's waiter of each key (a successor, or the gate head's). */
	private final ConcurrentHashMap<String, Waiter> racers = new ConcurrentHashMap<>();

	/** The clock drift allowance for a lease time, in nanoseconds (as a lease's validity uses). */
	private final ToLongFunction<Duration> clockDriftNanos;

	HandoffWaiters(WaiterHandoff backend, OwnerTokens owners, Duration pollInterval) {
		this(backend, owners, pollInterval, (ttl) -> 0L);
	}

	HandoffWaiters(WaiterHandoff backend, OwnerTokens owners, Duration pollInterval,
			ToLongFunction<Duration> clockDriftNanos) {
		this.backend = backend;
		this.owners = owners;
		this.recordFor = pollInterval.multipliedBy(2);
		this.clockDriftNanos = clockDriftNanos;
	}

	WaiterHandoff backend() {
		return this.backend;
	}

	/** How long each attempt of a waiter records it for, at most. */
	Duration recordFor() {
		return this.recordFor;
	}

	/**
	 * Two poll intervals, or the time left until {@code deadline} rounded up to 10 ms (so that the
	 * backend's encoding of the last duration is reused), whichever is shorter.
	 */
	private Duration recordFor(long deadline) {
		long left = deadline - System.nanoTime();
		long full = this.recordFor.toNanos();
		if (left >= full) {
			return this.recordFor;
		}
		long millis = Math.max(10, (TimeUnit.NANOSECONDS.toMillis(Math.max(left, 0)) + 9) / 10 * 10);
		return (TimeUnit.MILLISECONDS.toNanos(millis) >= full) ? this.recordFor : Duration.ofMillis(millis);
	}

	/**
	 * A waiting acquisition of {@code key} with one owner token in all its attempts, registered
	 * before its first attempt so that no grant for it arrives unknown; {@code onGrant} must not
	 * block (it runs on the client's I/O thread).
	 */
	Waiter register(String key, Duration ttl, Runnable onGrant) {
		// The non-blocking path's acquisitions: not the key's racer, never a successor.
		Waiter waiter = new Waiter(key, this.owners.next(), ttl, onGrant);
		this.waiters.put(waiter.owner, waiter);
		return waiter;
	}

	/**
	 * The waiter of the key's racer (the local gate's head): the key's successor if one waits to
	 * be adopted, else a new one.
	 */
	Waiter adopt(String key, Duration ttl, Runnable onGrant) {
		while (true) {
			Waiter current = this.racers.get(key);
			if (current != null && !current.ttl.equals(ttl) && current.adopt(NOBODY)) {
				// Recorded (and perhaps handed the lock) with another lease time: not this racer's.
				current.gaveUp();
				continue;
			}
			if (current != null && current.adopt(onGrant)) {
				return current;
			}
			Waiter fresh = new Waiter(key, this.owners.next(), ttl, onGrant);
			ADOPTED.set(fresh, 1);
			// Replaces a successor being withdrawn; never leaves an entry nobody removes.
			if ((current != null) ? this.racers.replace(key, current, fresh)
					: this.racers.putIfAbsent(key, fresh) == null) {
				this.waiters.put(fresh.owner, fresh);
				return fresh;
			}
		}
	}

	/** A racer took {@code key} while other threads of this process queue for it. */
	void successor(String key, Duration ttl) {
		this.racers.computeIfAbsent(key, (k) -> {
			Waiter waiter = new Waiter(k, this.owners.next(), ttl, NOBODY);
			this.waiters.put(waiter.owner, waiter);
			return waiter;
		});
	}

	/** The key's local queue emptied: a successor nobody adopted is withdrawn. */
	void queueEmptied(String key) {
		Waiter successor = this.racers.get(key);
		if (successor != null && successor.adopt(NOBODY)) {
			successor.gaveUp();
		}
	}

	/**
	 * This process's next waiter for {@code key}, to record with a release (its owner and lease
	 * time), or {@code null}. Called just before the release is sent, of a lease valid until
	 * {@code heldUntilNanos}: while it is valid the waiter cannot hold the lock, so if it is still
	 * valid now, no release made the waiter the holder in the lease time before now, and now may
	 * start the waiter's lease (by the rule of {@link Waiter#refused}, as a refusal answered now).
	 */
	@Nullable Waiter localWaiter(String key, long heldUntilNanos) {
		Waiter waiter = this.racers.get(key);
		if (waiter == null) {
			return null;
		}
		int state = STATE.get(waiter);
		if (state == WAITING) {
			long now = System.nanoTime();
			if (heldUntilNanos - now > 0) {
				waiter.recordedAt(now);
			}
			return waiter;
		}
		return (state == GRANTED) ? waiter : null;
	}

	/**
	 * A grant published by the backend (or learned from a release's answer), for any process's
	 * waiter: with a token, the backend made {@code owner} the holder; with 0, it reserved the lock
	 * for it (a record of an earlier version, or of a backend with replica acknowledgements).
	 */
	void onGrant(String key, String owner, long fencingToken) {
		Waiter waiter = this.waiters.get(owner);
		if (waiter != null && waiter.key.equals(key)) {
			if (fencingToken > 0) {
				// Written before the state that publishes it; a second copy writes the same token.
				waiter.fencingToken = fencingToken;
				if (STATE.compareAndSet(waiter, WAITING, ASSIGNED) || STATE.compareAndSet(waiter, GRANTED, ASSIGNED)) {
					waiter.onGrant.run();
					return;
				}
			}
			else if (STATE.compareAndSet(waiter, WAITING, GRANTED) || STATE.get(waiter) == GRANTED) {
				waiter.onGrant.run();
				return;
			}
			int state = STATE.get(waiter);
			if (state != GONE) {
				// ASSIGNED or TAKEN: a second copy of the grant (an earlier version's release
				// announced its own successor's grant too, which then came in either order with the
				// answer). Never withdraw an owner that holds or may return the lock.
				return;
			}
		}
		else if (!goneRecently(owner)) {
			// Another process's waiter, or ours that no longer waits here and is not known gone: it
			// may have taken the lock and not registered its lease yet: never touch it.
			return;
		}
		// Gone (state GONE, final; found in the map as it left, or among the last gone): a release
		// may have recorded and drawn it after its own withdrawal ran (a successor whose key's
		// queue emptied while the release naming it was still to be sent). Its acquisition ended without the lock and never takes it (owner tokens are never
		// reused), so the lock handed to it is nobody's in use: hand it on rather than let it expire.
		this.backend.withdraw(key, owner);
	}

	private boolean goneRecently(String owner) {
		for (int i = 0; i < RECENTLY_GONE; i++) {
			if (owner.equals(this.recentlyGone.get(i))) {
				return true;
			}
		}
		return false;
	}

	/** How many waiters are registered now. */
	int size() {
		return this.waiters.size();
	}

	/** What an attempt that took the lock finds: see {@link Waiter#took()}. */
	enum Took {

		NOW, BY_GRANT, AFTER_GIVING_UP

	}

	/** The state of each waiter: a field, not an object of its own per waiting acquisition. */
	private static final AtomicIntegerFieldUpdater<Waiter> STATE = AtomicIntegerFieldUpdater.newUpdater(Waiter.class,
			"state");

	private static final AtomicIntegerFieldUpdater<Waiter> ADOPTED = AtomicIntegerFieldUpdater.newUpdater(Waiter.class,
			"adopted");

	/** One waiting acquisition. */
	final class Waiter {

		final String key;

		final String owner;

		/** The lease time of every attempt and record of this waiter. */
		final Duration ttl;

		private volatile Runnable onGrant;

		/** The fencing token of a grant that made this waiter the holder (state ASSIGNED). */
		private volatile long fencingToken;

		/**
		 * A nanoTime known to precede every moment a release may have made this waiter the
		 * holder: this waiter's creation (before any record of it), moved only to the send time of
		 * a refused attempt, or of a release that recorded it while its own lease was valid, that
		 * was answered less than one lease time after the value it replaces ({@link #refused}).
		 */
		private volatile long leaseFrom = System.nanoTime();

		/** WAITING, GRANTED, ASSIGNED, TAKEN or GONE ({@link #STATE}). */
		private volatile int state = WAITING;

		/** 1 once a racer adopted this waiter (or it was withdrawn before any did; {@link #ADOPTED}). */
		private volatile int adopted;

		Waiter(String key, String owner, Duration ttl, Runnable onGrant) {
			this.key = key;
			this.owner = owner;
			this.ttl = ttl;
			this.onGrant = onGrant;
		}

		/**
		 * A release that records this waiter is about to be sent, at {@code nanos}, while the
		 * releasing lease is valid: the key is another owner's now, as if a refusal was answered
		 * now.
		 */
		void recordedAt(long nanos) {
			advanceLeaseFrom(nanos, nanos);
		}

		/**
		 * An attempt of this waiter sent at {@code sentAt} was refused, and its answer arrived at
		 * {@code answeredAt} (both nanoTime). Moves the lease start to {@code sentAt} only if the
		 * answer came less than one lease time (less the clock drift allowance) after the current
		 * start: a release that made this waiter the holder after that start would have kept the
		 * key this waiter's for a lease time, in which its attempts are not refused (idempotent),
		 * so this refusal would have run, and been answered, more than a lease time after the
		 * start. A later answer may come from a refusal that ran after a lock handed to this
		 * waiter expired unused, whose grant may still be on its way: the start stays, only ages,
		 * and a grant then is left to the next attempt.
		 */
		void refused(long sentAt, long answeredAt) {
			advanceLeaseFrom(sentAt, answeredAt);
		}

		private void advanceLeaseFrom(long nanos, long answeredAt) {
			// Only while no grant is known: a refusal that ran after a handoff (the lock expired in
			// between) must not move a lease's start past the handoff; nor one answered a lease time
			// or more after the start (review-redis-2 MEDIUM: a stale grant heard after it).
			long from = this.leaseFrom;
			if (STATE.get(this) == WAITING && nanos - from > 0 && answeredAt - from < trustedNanos()) {
				this.leaseFrom = nanos;
			}
		}

		/** The lease time less the clock drift allowance, in nanoseconds. */
		private long trustedNanos() {
			return this.ttl.toNanos() - HandoffWaiters.this.clockDriftNanos.applyAsLong(this.ttl);
		}

		/**
		 * Whether a grant made this waiter the holder and its lease start is recent (at most a
		 * third of the lease time ago): then the acquisition takes the lock now, without another
		 * call ({@link #fencingToken()}, {@link #leaseFrom()}); leaves as {@link #took} does.
		 * False if no grant came, another path took it, or the start is too old to trust the
		 * lease time left (the next attempt then acquires again idempotently).
		 */
		boolean takeGranted() {
			if (STATE.get(this) != ASSIGNED || System.nanoTime() - this.leaseFrom > this.ttl.toNanos() / 3) {
				return false;
			}
			if (!STATE.compareAndSet(this, ASSIGNED, TAKEN)) {
				return false;
			}
			leave();
			return true;
		}

		/** The fencing token of the grant that {@link #takeGranted} took. */
		long fencingToken() {
			return this.fencingToken;
		}

		/** The lease start of the grant that {@link #takeGranted} took (nanoTime). */
		long leaseFrom() {
			return this.leaseFrom;
		}

		/** Takes this waiter over for a racer; false if another racer did, or it was withdrawn. */
		private boolean adopt(Runnable onGrant) {
			if (!ADOPTED.compareAndSet(this, 0, 1)) {
				return false;
			}
			this.onGrant = onGrant;
			int state = STATE.get(this);
			if (state == GRANTED || state == ASSIGNED) {
				// Granted before the racer came: it attempts (or takes it) at once anyway; wake it all the same.
				onGrant.run();
			}
			return true;
		}

		/** Whether the acquisition took the lock ({@code TAKEN}) or ended without it ({@code GONE}). */
		boolean ended() {
			int state = STATE.get(this);
			return state == TAKEN || state == GONE;
		}

		/** Whether no grant reached this waiter and it has not left. */
		boolean waiting() {
			return STATE.get(this) == WAITING;
		}

		/**
		 * A release that named this waiter failed, or its answer was lost: the backend may have
		 * handed the lock to this waiter with no grant heard. If it has left ({@code GONE}, final:
		 * its acquisition never takes the lock), withdraws it once more, which hands such a lock
		 * on; its own withdrawal may have reached the backend before that release. A waiter still
		 * waiting is woken by the caller and finds the lock its own with its next attempt (a later
		 * {@link #gaveUp} withdraws it then).
		 */
		void releaseFailed() {
			if (STATE.get(this) == GONE) {
				HandoffWaiters.this.backend.withdraw(this.key, this.owner);
			}
		}

		/**
		 * One attempt that takes the lock if free or reserved for this waiter, else records it
		 * until two poll intervals from now or the caller's {@code deadline} (nanoTime), whichever
		 * comes first: a record dies with its wait even when the withdrawal is lost.
		 */
		AcquireResult attempt(long deadline) {
			return HandoffWaiters.this.backend.tryAcquireWaiting(this.key, this.owner, this.ttl, recordFor(deadline));
		}

		/** {@link #attempt} without blocking. */
		CompletionStage<AcquireResult> attemptAsync(long deadline) {
			return HandoffWaiters.this.backend.tryAcquireWaitingAsync(this.key, this.owner, this.ttl,
					recordFor(deadline));
		}

		/**
		 * An attempt took the lock: leaves without withdrawing (a later {@link #gaveUp} does
		 * nothing) and answers {@link Took#NOW}. {@link Took#BY_GRANT} if a grant took it first
		 * ({@link #takeGranted}): that answer is the same lock, already returned.
		 * {@link Took#AFTER_GIVING_UP} if the acquisition ended first (a cancelled non-blocking
		 * one): its withdrawal hands the lock on, or, if this attempt ran after it, nobody does;
		 * the caller releases it and never registers it.
		 */
		Took took() {
			while (true) {
				int current = STATE.get(this);
				if (current == TAKEN) {
					return Took.BY_GRANT;
				}
				if (current == GONE) {
					return Took.AFTER_GIVING_UP;
				}
				if (STATE.compareAndSet(this, current, TAKEN)) {
							leave();
					return Took.NOW;
				}
			}
		}

		/**
		 * The acquisition ends without the lock (also after a failure): leaves, and withdraws its
		 * record and any lock a release handed to it (a grant it did not return). Idempotent;
		 * nothing once it took the lock, and then answers false: the lock was returned (by a grant,
		 * on another thread, perhaps while an attempt was in flight), so whoever ends the
		 * acquisition must not release it by owner either.
		 */
		boolean gaveUp() {
			leave();
			int previous = STATE.getAndUpdate(this, (current) -> (current == TAKEN) ? TAKEN : GONE);
			if (previous == WAITING || previous == GRANTED || previous == ASSIGNED) {
				HandoffWaiters.this.recentlyGone.set(
						Math.floorMod(HandoffWaiters.this.recentlyGoneNext.getAndIncrement(), RECENTLY_GONE), this.owner);
				// ASSIGNED: a grant made it the holder, but the acquisition ends without returning
				// the lock (the state decided it): hand the lock on.
				HandoffWaiters.this.backend.withdraw(this.key, this.owner);
			}
			return previous != TAKEN;
		}

		/**
		 * An attempt sent after the acquisition ended (and withdrew) was refused and so recorded
		 * this waiter again: withdraws it once more.
		 */
		void recordedAfterGivingUp() {
			if (STATE.get(this) == GONE) {
				HandoffWaiters.this.backend.withdraw(this.key, this.owner);
			}
		}

		/**
		 * An attempt answered after the lease that this waiter's grant returned was released (and
		 * the release answered) was refused, so it may have recorded this waiter again: withdraws it,
		 * so that no later release hands the lock to an acquisition that has ended. The lease ended,
		 * so no lock of this owner is in use.
		 */
		void recordedAfterItsLeaseEnded() {
			if (STATE.get(this) == TAKEN) {
				HandoffWaiters.this.backend.withdraw(this.key, this.owner);
			}
		}

		private void leave() {
			HandoffWaiters.this.waiters.remove(this.owner, this);
			HandoffWaiters.this.racers.remove(this.key, this);
		}

	}

}
