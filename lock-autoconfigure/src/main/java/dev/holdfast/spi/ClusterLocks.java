package dev.holdfast.spi;

import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * A backend that can list the locks held on it by every instance, and release one by force:
 * what an operator sees and does through the {@code locks} endpoint. Optional: without it, the
 * endpoint lists this instance's leases only and answers that a forced release is unsupported.
 */
public interface ClusterLocks {

	/**
	 * The live locks whose key starts with {@code prefix}, held by any instance: reserved locks,
	 * tick records and expired locks are not listed. Bounded: at most {@code max} locks, and a
	 * bounded read of the backend (a backend that stops before it saw every key says so).
	 * @param prefix the key prefix of the application's locks
	 * @param max the most locks to return
	 * @throws dev.holdfast.LockBackendException if the backend cannot be reached
	 */
	Listing listLocks(String prefix, int max);

	/**
	 * The live lock at {@code key}, held by any instance, or {@code null} when none: a read of
	 * that key alone, never of every key (the {@code leaders} endpoint asks it for the groups it
	 * follows). The default lists under {@code key} as the prefix, one lock at most; a backend
	 * whose listing reads more than the keys under its prefix overrides it.
	 * @param key the full backend key
	 * @throws dev.holdfast.LockBackendException if the backend cannot be reached
	 */
	default @Nullable BackendLock lock(String key) {
		List<BackendLock> first = listLocks(key, 1).locks();
		return (!first.isEmpty() && first.get(0).key().equals(key)) ? first.get(0) : null;
	}

	/**
	 * Releases the lock at {@code key} whoever holds it, in one round trip: its holder's next
	 * renewal is refused (the holder learns it lost the lock), and the next holder's fencing
	 * token is larger than the released holder's.
	 * @param key the full backend key
	 * @param fencingToken release only if the holder's fencing token is this one; any holder
	 * when {@code null}
	 * @return whether a holder's lock was released
	 * @throws dev.holdfast.LockBackendException if the backend cannot be reached
	 */
	boolean forceRelease(String key, @Nullable Long fencingToken);

	/**
	 * Locks of a listing.
	 *
	 * @param locks the locks, ordered by key
	 * @param complete whether every key under the prefix was read; {@code false} when the listing
	 * stopped at its bound
	 */
	record Listing(List<BackendLock> locks, boolean complete) {

		public Listing {
			locks = List.copyOf(locks);
		}

	}

	/**
	 * A lock held on the backend.
	 *
	 * @param key the full backend key
	 * @param instance the name of the instance that holds it ({@link InstanceNames}); of a read-held
	 * key, its readers ({@link InstanceNames#readers}, or the names of their instances where the
	 * backend tells them); {@code null} when the backend cannot tell
	 * @param fencingToken the fencing token of its holder
	 * @param remainingMillis how long it lives unless renewed, by the backend's clock; {@code -1}
	 * when the backend cannot tell
	 */
	record BackendLock(String key, @Nullable String instance, long fencingToken, long remainingMillis) {
	}

}
