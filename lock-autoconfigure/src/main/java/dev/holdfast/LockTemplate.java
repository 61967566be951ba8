package dev.holdfast;

import java.util.Optional;

import org.jspecify.annotations.Nullable;

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
	 * Code to run under a lock.
	 * @param <T> the result type
	 * @param <E> the exception the code may throw
	 */
	@FunctionalInterface
	interface LockedAction<T extends @Nullable Object, E extends Exception> {

		T run() throws E;

	}

}
