package dev.holdfast.core;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.jspecify.annotations.Nullable;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockInterruptedException;
import dev.holdfast.LockListener;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.KeySetAcquisition;

/**
 * A template's calls that take several keys in one backend call ({@link KeySetAcquisition}): all of
 * them (MKY-6) or the first free one (SEM-7), each key as its try-once acquisition would be taken,
 * registered as a single acquisition's lease. Rules: docs/DESIGN.md, "Several keys" and "Semaphores".
 */
final class AtOnceAcquisitions {

	/** The most keys taken in one backend call (MKY-6), so that one script or statement stays short. */
	static final int MAX_KEYS = 1000;

	private final Acquisitions room;

	AtOnceAcquisitions(Acquisitions room) {
		this.room = room;
	}

	/**
	 * Takes {@code keys} with one {@link KeySetAcquisition} call, a try-once of each (MKY-6): their
	 * registered leases, or {@code null} if the backend cannot now or refused (nothing taken).
	 * @throws LockBackendException if the call failed (interrupted: LockInterruptedException); each key is released
	 */
	@Nullable List<HeldLease> acquireAll(String name, List<String> keys, Duration ttl, boolean renew) {
		if (keys.size() > MAX_KEYS) {
			return null;
		}
		if (Thread.currentThread().isInterrupted()) {
			// as the blocking path: the flag stays set, nothing is taken
			throw new LockInterruptedException(this.room.failures.shown(keys.get(0)), new InterruptedException());
		}
		// held or being released here, or a local waiter first in line (ACQ-1, ACQ-5): the per-key path
		if (!unclaimedHere(keys, true) || !acquiresAtOnce()) {
			return null;
		}
		List<HeldLock> locks = locks(keys, ttl);
		long sent = System.nanoTime();
		long[] tokens;
		try {
			tokens = ((KeySetAcquisition) this.room.backend).tryAcquireAll(locks);
		}
		catch (RuntimeException ex) {
			throw failedAtOnce(name, locks, sent, ex);
		}
		if (tokens == null) {
			return null;
		}
		List<HeldLease> leases = new ArrayList<>(locks.size());
		for (int i = 0; i < tokens.length; i++) {
			leases.add(registerTaken(name, locks.get(i), tokens[i], renew, sent));
		}
		return leases;
	}

	/** Whether the backend takes several keys in one call now ({@link KeySetAcquisition}, MKY-6, SEM-7). */
	boolean acquiresAtOnce() {
		return this.room.backend instanceof KeySetAcquisition batch && batch.acquiresKeySets();
	}

	/**
	 * Whether {@link #acquireFirst} may be tried for {@code keys}: several, the backend takes them at
	 * once now, the thread is not interrupted, and no key has a release in flight or a local waiter
	 * here (ACQ-5, ACQ-1: those get their try-once, as each other key).
	 */
	boolean takesFirstAtOnce(List<String> keys) {
		return keys.size() > 1 && acquiresAtOnce() && !Thread.currentThread().isInterrupted()
				&& unclaimedHere(keys, false);
	}

	/**
	 * Takes the first free of {@code keys}, in their order, with one {@link KeySetAcquisition}
	 * call, a try-once of each (SEM-7): its registered lease, or {@code null} if none was free or
	 * the backend found it cannot ({@link #acquiresAtOnce} is false then). Each key refused (all,
	 * or those before the one taken) is told to the listener as its try-once would be: not acquired.
	 * @throws LockBackendException if the call failed (interrupted: LockInterruptedException); each key is released
	 */
	@Nullable HeldLease acquireFirst(String name, List<String> keys, Duration ttl, boolean renew) {
		List<HeldLock> locks = locks(keys, ttl);
		long sent = System.nanoTime();
		KeySetAcquisition.FirstTaken taken;
		try {
			taken = ((KeySetAcquisition) this.room.backend).tryAcquireFirst(locks);
		}
		catch (RuntimeException ex) {
			throw failedAtOnce(name, locks, sent, ex);
		}
		if (taken == null) {
			// the batch off: the backend could not after all, the caller tries each key; on (it only turns
			// off, so on for the whole call): each key was refused
			if (acquiresAtOnce()) {
				refused(name, keys, sent);
			}
			return null;
		}
		refused(name, keys.subList(0, taken.index()), sent);
		return registerTaken(name, locks.get(taken.index()), taken.fencingToken(), renew, sent);
	}

	/** Keys a call at once found held: each a try-once not acquired after the call's time (SEM-7). */
	private void refused(String name, List<String> keys, long sent) {
		if (this.room.listener == LockListener.NONE || keys.isEmpty()) {
			return;
		}
		String backendName = this.room.failures.backendName();
		Duration waited = Duration.ofNanos(System.nanoTime() - sent);
		for (String key : keys) {
			this.room.listener.acquiring(name, key, backendName).notAcquired();
			this.room.listener.notAcquired(name, backendName, LockKeys.mode(key, false), waited);
		}
	}

	/**
	 * Whether no key has a local waiter, nor a lease here ({@code anyLease}) or a release in
	 * flight here: what a call at once takes no heed of (MKY-6, SEM-7).
	 */
	private boolean unclaimedHere(List<String> keys, boolean anyLease) {
		for (String key : keys) {
			if (this.room.lines.wanted(key) || (anyLease ? this.room.leases.get(key) : this.room.leases.releaseInFlight(key)) != null) {
				return false;
			}
		}
		return true;
	}

	private List<HeldLock> locks(List<String> keys, Duration ttl) {
		return keys.stream().map((key) -> new HeldLock(key, this.room.owners.next(), ttl)).toList();
	}

	/** A call that took keys at once failed: each may be taken, so each is released in the background (ACQ-4). */
	private RuntimeException failedAtOnce(String name, List<HeldLock> locks, long sent, RuntimeException ex) {
		String backendName = this.room.failures.backendName();
		locks.forEach((lock) -> this.room.background.releaseUnknownOutcome(lock.key(), lock.owner()));
		LockBackendException failure = this.room.failures.of(ex, "acquire", locks.get(0).key());
		this.room.listener.acquiring(name, locks.get(0).key(), backendName).failed(failure);
		this.room.listener.failed(name, backendName, LockKeys.mode(locks.get(0).key(), false),
				Duration.ofNanos(System.nanoTime() - sent), failure);
		return this.room.failures.interruptedOr(failure, locks.get(0).key());
	}

	/** The lease of a key a call at once took, registered as a single acquisition's. */
	private HeldLease registerTaken(String name, HeldLock lock, long token, boolean renew, long sent) {
		String backendName = this.room.failures.backendName();
		HeldLease lease = this.room.leases.register(name, lock.key(), lock.owner(), token, lock.ttl(), renew, sent,
				this.room.listener.acquiring(name, lock.key(), backendName));
		this.room.listener.acquired(name, backendName, LockKeys.mode(lock.key(), false),
				Duration.ofNanos(System.nanoTime() - sent));
		return lease;
	}

}
