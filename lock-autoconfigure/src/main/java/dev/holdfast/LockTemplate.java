package dev.holdfast;

import java.util.Collection;
import java.util.Optional;

import org.jspecify.annotations.Nullable;

import dev.holdfast.multi.KeySetLocking;
import dev.holdfast.semaphore.PermitSlots;

/**
 * Programmatic access to Holdfast locks, for code paths where {@link DistributedLock} does not
 * fit. A lock is identified by a name and an optional key; both are encoded into one backend
 * key exactly as the annotation does.
 */
public interface LockTemplate {

	/**
	 * Runs {@code action} while holding the lock.
	 * @throws LockNotAcquiredException if the lock stayed held by another owner for the wait time
	 * @throws LockBackendException if the backend could not be reached; the action did not run
	 */
	<T extends @Nullable Object, E extends Exception> T executeLocked(String name, @Nullable Object key,
			LockOptions options, LockedAction<T, E> action) throws E;

	/**
	 * Runs {@code action} while holding the lock, or returns empty without running it if the lock
	 * stayed held for the wait time. An action that returns {@code null} also gives empty.
	 * @throws LockBackendException if the backend could not be reached; the action did not run
	 */
	<T, E extends Exception> Optional<T> tryExecuteLocked(String name, @Nullable Object key, LockOptions options,
			LockedAction<T, E> action) throws E;

	/**
	 * Acquires the lock, waiting up to the wait time. Close the lease to release it.
	 * @return the lease, or empty if the lock stayed held by another owner for the wait time
	 * @throws LockBackendException if the backend could not be reached
	 */
	Optional<Lease> tryAcquire(String name, @Nullable Object key, LockOptions options);

	/**
	 * Acquires the lock, waiting up to the wait time. Close the lease to release it.
	 * @throws LockNotAcquiredException if the lock stayed held by another owner for the wait time
	 * @throws LockBackendException if the backend could not be reached
	 */
	Lease acquire(String name, @Nullable Object key, LockOptions options);

	/**
	 * Acquires the locks of several keys of one name, all or none, within one wait time: in one
	 * canonical order (their backend keys, sorted, duplicates removed), so that two such calls never
	 * deadlock; each key waits for what is left of the wait time. If one key stays held, the keys
	 * already taken are released. Each key is reentrant as {@link #acquire} is. Close the leases to
	 * release them, in reverse order.
	 * @param keys the key values, each one lock ({@code null} elements are refused); a collection
	 * passed to {@link #acquire} is one key, here each element is one
	 * @return the leases, or empty if one key stayed held by another owner for the wait time
	 * @throws IllegalArgumentException if {@code keys} is empty or holds {@code null}
	 * @throws LockBackendException if the backend could not be reached; no key is left held
	 */
	default Optional<Leases> tryAcquireAll(String name, Collection<?> keys, LockOptions options) {
		return Optional.ofNullable(KeySetLocking.acquire(this, name, keys, options, false));
	}

	/**
	 * {@link #tryAcquireAll}, throwing when a key stayed held.
	 * @throws LockNotAcquiredException naming the key that stayed held by another owner until the
	 * wait time ran out; no key is left held
	 */
	default Leases acquireAll(String name, Collection<?> keys, LockOptions options) {
		Leases leases = KeySetLocking.acquire(this, name, keys, options, true);
		if (leases == null) {
			throw new IllegalStateException("acquireAll got no leases without an exception");
		}
		return leases;
	}

	/**
	 * Runs {@code action} while holding the locks of all {@code keys} ({@link #acquireAll}).
	 * @throws LockNotAcquiredException if a key stayed held by another owner for the wait time
	 */
	default <T extends @Nullable Object, E extends Exception> T executeLockedAll(String name, Collection<?> keys,
			LockOptions options, LockedAction<T, E> action) throws E {
		try (Leases leases = acquireAll(name, keys, options)) {
			return action.run();
		}
	}

	/**
	 * Takes a permit of the semaphore of (name, key), waiting up to the wait time: at most
	 * {@code permits} holders at once, across every instance. The permit is a lease of its own
	 * (owner-checked release, expiry by the backend's clock, renewal, loss, a fencing token of its
	 * permit slot): a crashed holder's permit comes back within one lease time. Permits are not
	 * reentrant: each call takes a permit of its own, as {@link java.util.concurrent.Semaphore}
	 * does. Close the lease to give the permit back.
	 * @param permits how many permits the semaphore has, 1 to 64; every instance must give one
	 * semaphore the same number
	 * @return the permit, or empty if every permit stayed held by other owners for the wait time
	 * @throws IllegalArgumentException if {@code permits} is out of range, or an earlier call of this
	 * application gave the semaphore other permits
	 * @throws IllegalStateException if another instance uses the semaphore with more permits (found
	 * when this call finds every permit held, at most once per 2 s)
	 * @throws LockBackendException if the backend could not be reached
	 */
	default Optional<Lease> tryAcquirePermit(String name, @Nullable Object key, int permits, LockOptions options) {
		return Optional.ofNullable(PermitSlots.acquire(this, name, key, permits, options, false));
	}

	/**
	 * {@link #tryAcquirePermit}, throwing when every permit stayed held.
	 * @throws PermitNotAcquiredException if every permit stayed held by other owners for the wait time
	 */
	default Lease acquirePermit(String name, @Nullable Object key, int permits, LockOptions options) {
		Lease permit = PermitSlots.acquire(this, name, key, permits, options, true);
		if (permit == null) {
			throw new IllegalStateException("acquirePermit got no permit without an exception");
		}
		return permit;
	}

	/**
	 * Runs {@code action} while holding a permit of the semaphore ({@link #acquirePermit}).
	 * @throws PermitNotAcquiredException if every permit stayed held by other owners for the wait time
	 */
	default <T extends @Nullable Object, E extends Exception> T executeWithPermit(String name, @Nullable Object key,
			int permits, LockOptions options, LockedAction<T, E> action) throws E {
		try (Lease permit = acquirePermit(name, key, permits, options)) {
			return action.run();
		}
	}

	/**
	 * Code to run under a lock.
	 * @param <T> the result type
	 * @param <E> the exception the code may throw
	 */
	@FunctionalInterface
	interface LockedAction<T extends @Nullable Object, E extends Exception> {

		T run() throws E;

	}

}
