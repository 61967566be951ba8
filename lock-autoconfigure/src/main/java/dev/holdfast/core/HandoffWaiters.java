package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.BiPredicate;

import org.jspecify.annotations.Nullable;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.WaiterHandoff;

/**
 * The waiting acquisitions of one template on a {@link WaiterHandoff} backend, by owner token:
 * each records itself with its refused attempts, the backend's release hands the lock to one
 * recorded waiter and announces the grant, and this class wakes the waiter it names.
 * <p>
 * One state per waiter, changed atomically: {@code WAITING -> GRANTED} (a grant arrived; its next
 * attempt claims the lock), {@code -> TAKEN} when an attempt took the lock, and
 * {@code WAITING or GRANTED -> GONE} when the acquisition ends without the lock (timeout,
 * interrupt, cancel, failure), which then withdraws it on the backend: the record goes and a
 * reservation for it is handed on. A waiter that took the lock leaves without withdrawing. A
 * grant for a waiter that is gone, or for an owner of this template that waits no more (and does
 * not hold the key), is handed on at once rather than held for the claim window. Withdrawals are
 * safe whatever the waiter did: the backend hands on only a reservation, never a lock the owner
 * took.
 * <p>
 * The blocking path's waiter of a key (one per key: the local gate's head) may be created ahead
 * of its racer: when a racer takes the lock while other threads of this process queue for the
 * key, a <em>successor</em> is registered for the key, and the release of that lock records it
 * before the draw ({@link WaiterHandoff#release(String, String, String, Duration)}), so that this
 * process's next waiter is drawn as often as another process's, even when the critical section
 * ends before that thread has run. The next racer of the key adopts it; if none does (the queue
 * emptied), it is withdrawn.
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

	private static final Runnable NOBODY = () -> {
	};

	private final WaiterHandoff backend;

	private final OwnerTokens owners;

	/** Whether this template holds {@code key} under {@code owner} now. */
	private final BiPredicate<String, String> holds;

	/** How long a record lasts without another attempt: two poll intervals. */
	private final Duration recordFor;

	private final ConcurrentHashMap<String, Waiter> waiters = new ConcurrentHashMap<>();

	/** Owners of the last {@value #RECENTLY_TAKEN} waiters that took their lock, oldest overwritten. */
	private static final int RECENTLY_TAKEN = 64;

	private final AtomicReferenceArray<String> recentlyTaken = new AtomicReferenceArray<>(RECENTLY_TAKEN);

	private final AtomicInteger recentlyTakenNext = new AtomicInteger();

	/** The blocking path's waiter of each key (a successor, or the gate head's). */
	private final ConcurrentHashMap<String, Waiter> racers = new ConcurrentHashMap<>();

	HandoffWaiters(WaiterHandoff backend, OwnerTokens owners, Duration pollInterval,
			BiPredicate<String, String> holds) {
		this.backend = backend;
		this.owners = owners;
		this.holds = holds;
		this.recordFor = pollInterval.multipliedBy(2);
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
	Waiter register(String key, Runnable onGrant) {
		// The non-blocking path's acquisitions: not the key's racer, never a successor.
		Waiter waiter = new Waiter(key, this.owners.next(), onGrant);
		this.waiters.put(waiter.owner, waiter);
		return waiter;
	}

	/**
	 * The waiter of the key's racer (the local gate's head): the key's successor if one waits to
	 * be adopted, else a new one.
	 */
	Waiter adopt(String key, Runnable onGrant) {
		while (true) {
			Waiter current = this.racers.get(key);
			if (current != null && current.adopt(onGrant)) {
				return current;
			}
			Waiter fresh = new Waiter(key, this.owners.next(), onGrant);
			fresh.adopted.set(true);
			// Replaces a successor being withdrawn; never leaves an entry nobody removes.
			if ((current != null) ? this.racers.replace(key, current, fresh)
					: this.racers.putIfAbsent(key, fresh) == null) {
				this.waiters.put(fresh.owner, fresh);
				return fresh;
			}
		}
	}

	/** A racer took {@code key} while other threads of this process queue for it. */
	void successor(String key) {
		this.racers.computeIfAbsent(key, (k) -> {
			Waiter waiter = new Waiter(k, this.owners.next(), NOBODY);
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

	/** The owner of this process's next waiter for {@code key}, to record with a release, or {@code null}. */
	@Nullable String localWaiter(String key) {
		Waiter waiter = this.racers.get(key);
		if (waiter == null) {
			return null;
		}
		int state = waiter.state.get();
		return (state == WAITING || state == GRANTED) ? waiter.owner : null;
	}

	/** A grant published by the backend (or learned from a release's answer), for any process's waiter. */
	void onGrant(String key, String owner) {
		Waiter waiter = this.waiters.get(owner);
		if (waiter != null && waiter.key.equals(key)) {
			if (waiter.state.compareAndSet(WAITING, GRANTED) || waiter.state.get() == GRANTED) {
				waiter.onGrant.run();
				return;
			}
		}
		else if (!this.owners.isOwn(owner) || this.holds.test(key, owner) || tookRecently(owner)) {
			// Another process's waiter, or ours that took the lock already (it claimed before this
			// copy of the grant arrived: the answer's and the announcement's copies come in either
			// order), even if it has released it since.
			return;
		}
		// Gone, or no longer (or never) waiting here: hand it on rather than hold it for the claim
		// window. The backend passes on a reservation only, so this cannot touch a lock the owner
		// took.
		this.backend.withdraw(key, owner);
	}

	private boolean tookRecently(String owner) {
		for (int i = 0; i < RECENTLY_TAKEN; i++) {
			if (owner.equals(this.recentlyTaken.get(i))) {
				return true;
			}
		}
		return false;
	}

	/** How many waiters are registered now. */
	int size() {
		return this.waiters.size();
	}

	/** One waiting acquisition. */
	final class Waiter {

		final String key;

		final String owner;

		private volatile Runnable onGrant;

		private final AtomicInteger state = new AtomicInteger(WAITING);

		/** Whether a racer adopted this waiter (or it was withdrawn before any did). */
		private final AtomicBoolean adopted = new AtomicBoolean();

		Waiter(String key, String owner, Runnable onGrant) {
			this.key = key;
			this.owner = owner;
			this.onGrant = onGrant;
		}

		/** Takes this waiter over for a racer; false if another racer did, or it was withdrawn. */
		private boolean adopt(Runnable onGrant) {
			if (!this.adopted.compareAndSet(false, true)) {
				return false;
			}
			this.onGrant = onGrant;
			if (this.state.get() == GRANTED) {
				// Granted before the racer came: it attempts at once anyway; wake it all the same.
				onGrant.run();
			}
			return true;
		}

		/**
		 * One attempt that takes the lock if free or reserved for this waiter, else records it
		 * until two poll intervals from now or the caller's {@code deadline} (nanoTime), whichever
		 * comes first: a record dies with its wait even when the withdrawal is lost.
		 */
		AcquireResult attempt(Duration ttl, long deadline) {
			return HandoffWaiters.this.backend.tryAcquireWaiting(this.key, this.owner, ttl, recordFor(deadline));
		}

		/** {@link #attempt} without blocking. */
		CompletionStage<AcquireResult> attemptAsync(Duration ttl, long deadline) {
			return HandoffWaiters.this.backend.tryAcquireWaitingAsync(this.key, this.owner, ttl,
					recordFor(deadline));
		}

		/** The acquisition took the lock: leaves without withdrawing (a later {@link #gaveUp} does nothing). */
		void took() {
			this.state.set(TAKEN);
			HandoffWaiters.this.recentlyTaken.set(
					Math.floorMod(HandoffWaiters.this.recentlyTakenNext.getAndIncrement(), RECENTLY_TAKEN), this.owner);
			leave();
		}

		/**
		 * The acquisition ends without the lock (also after a failure): leaves, and withdraws its
		 * record and any reservation for it. Idempotent; nothing once it took the lock.
		 */
		void gaveUp() {
			leave();
			int previous = this.state.getAndUpdate((current) -> (current == TAKEN) ? TAKEN : GONE);
			if (previous == WAITING || previous == GRANTED) {
				HandoffWaiters.this.backend.withdraw(this.key, this.owner);
			}
		}

		/**
		 * An attempt sent after the acquisition ended (and withdrew) was refused and so recorded
		 * this waiter again: withdraws it once more.
		 */
		void recordedAfterGivingUp() {
			if (this.state.get() == GONE) {
				HandoffWaiters.this.backend.withdraw(this.key, this.owner);
			}
		}

		private void leave() {
			HandoffWaiters.this.waiters.remove(this.owner, this);
			HandoffWaiters.this.racers.remove(this.key, this);
		}

	}

}
