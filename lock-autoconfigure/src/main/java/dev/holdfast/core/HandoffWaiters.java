package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.WaiterHandoff;

/**
 * The waiting acquisitions of one template on a {@link WaiterHandoff} backend, by owner token:
 * each records itself with its refused attempts, the backend's release hands the lock to one
 * recorded waiter and announces the grant, and this class wakes the waiter it names.
 * <p>
 * One state per waiter, changed by compare-and-set only: {@code WAITING -> GRANTED} (a grant
 * arrived; its next attempt claims the lock), {@code -> TAKEN} when an attempt took the lock,
 * and {@code WAITING or GRANTED -> GONE} when the
 * acquisition ends without the lock (timeout, interrupt, cancel, failure), which then withdraws
 * it on the backend: the record goes and a reservation for it is handed on. A waiter that took
 * the lock leaves without withdrawing. A grant for a waiter that is gone, or for an owner of this
 * template that waits no more (its entry removed, or never registered), is handed on at once
 * rather than held for the claim window. Both withdrawals are safe whatever the waiter did: the
 * backend hands on only a reservation, never a lock the owner took.
 * <p>
 * Bounded: an entry lives from the acquisition's first attempt to its end, on every exit path.
 */
final class HandoffWaiters {

	private static final int WAITING = 0;

	private static final int GRANTED = 1;

	private static final int GONE = 2;

	private static final int TAKEN = 3;

	private final WaiterHandoff backend;

	private final OwnerTokens owners;

	/** How long a record lasts without another attempt: two poll intervals. */
	private final Duration recordFor;

	private final ConcurrentHashMap<String, Waiter> waiters = new ConcurrentHashMap<>();

	HandoffWaiters(WaiterHandoff backend, OwnerTokens owners, Duration pollInterval) {
		this.backend = backend;
		this.owners = owners;
		this.recordFor = pollInterval.multipliedBy(2);
	}

	WaiterHandoff backend() {
		return this.backend;
	}

	/** How long each attempt of a waiter records it for. */
	Duration recordFor() {
		return this.recordFor;
	}

	/**
	 * A waiting acquisition of {@code key} with {@code owner} in all its attempts, registered
	 * before its first attempt so that no grant for it arrives unknown; {@code onGrant} must not
	 * block (it runs on the client's I/O thread).
	 */
	Waiter register(String key, String owner, Runnable onGrant) {
		Waiter waiter = new Waiter(key, owner, onGrant);
		this.waiters.put(owner, waiter);
		return waiter;
	}

	/** A grant published by the backend, for any process's waiter. */
	void onGrant(String key, String owner) {
		Waiter waiter = this.waiters.get(owner);
		if (waiter != null && waiter.key.equals(key)) {
			if (waiter.state.compareAndSet(WAITING, GRANTED) || waiter.state.get() == GRANTED) {
				waiter.onGrant.run();
				return;
			}
		}
		else if (!this.owners.isOwn(owner)) {
			// Another process's waiter.
			return;
		}
		// Gone, or no longer (or never) waiting here: hand it on rather than hold it for the claim
		// window. The backend passes on a reservation only, so this cannot touch a lock the owner
		// took (a grant that arrived after the waiter claimed by its own poll).
		this.backend.withdraw(key, owner);
	}

	/** How many waiters are registered now. */
	int size() {
		return this.waiters.size();
	}

	/** One waiting acquisition. */
	final class Waiter {

		final String key;

		final String owner;

		private final Runnable onGrant;

		private final AtomicInteger state = new AtomicInteger(WAITING);

		Waiter(String key, String owner, Runnable onGrant) {
			this.key = key;
			this.owner = owner;
			this.onGrant = onGrant;
		}

		/** One attempt that takes the lock if free or reserved for this waiter, else records it. */
		AcquireResult attempt(Duration ttl) {
			return HandoffWaiters.this.backend.tryAcquireWaiting(this.key, this.owner, ttl,
					HandoffWaiters.this.recordFor);
		}

		/** {@link #attempt} without blocking. */
		CompletionStage<AcquireResult> attemptAsync(Duration ttl) {
			return HandoffWaiters.this.backend.tryAcquireWaitingAsync(this.key, this.owner, ttl,
					HandoffWaiters.this.recordFor);
		}

		/** Whether a grant for this waiter arrived. */
		boolean granted() {
			return this.state.get() == GRANTED;
		}

		/** The acquisition took the lock: leaves without withdrawing (a later {@link #gaveUp} does nothing). */
		void took() {
			this.state.set(TAKEN);
			HandoffWaiters.this.waiters.remove(this.owner, this);
		}

		/**
		 * The acquisition ends without the lock (also after a failure or when it took the lock and
		 * gave it back): leaves, and withdraws its record and any reservation for it. Idempotent.
		 */
		void gaveUp() {
			HandoffWaiters.this.waiters.remove(this.owner, this);
			int previous = this.state.getAndUpdate((current) -> (current == TAKEN) ? TAKEN : GONE);
			if (previous == WAITING || previous == GRANTED) {
				HandoffWaiters.this.backend.withdraw(this.key, this.owner);
			}
		}

	}

}
