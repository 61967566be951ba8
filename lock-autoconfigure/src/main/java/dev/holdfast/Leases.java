package dev.holdfast;

import java.util.List;

/**
 * The locks of several keys of one name, taken together: by
 * {@code @DistributedLock(keys = ...)} (read it with {@link LockContext#requireLeases()}) or
 * {@link LockTemplate#acquireAll}. The keys were taken in one canonical order (their backend
 * keys, sorted, duplicates removed), all or none; closing releases them in reverse order.
 * <pre>{@code
 * Leases leases = LockContext.requireLeases();
 * ledger.debit(from, amount, leases.fencingToken(from.id()));
 * }</pre>
 * As a {@link Lease}: {@link #key()} lists the backend keys, {@link #isValid()} is true while
 * every key's lease is, {@link #extend} extends every one, and {@link #fencingToken()} throws,
 * since each key has its own token.
 */
public interface Leases extends Lease {

	/** One lease per key, in the order they were taken (their backend keys, sorted). */
	List<Lease> leases();

	/**
	 * The lease of {@code key}, a key value as it was passed (rendered and encoded as the lock's
	 * key is).
	 * @throws IllegalArgumentException if {@code key} is not one of the keys held
	 */
	Lease lease(Object key);

	/** The fencing token of {@code key}'s lock: {@code lease(key).fencingToken()}. */
	default long fencingToken(Object key) {
		return lease(key).fencingToken();
	}

	/**
	 * Always throws: each key has its own fencing token.
	 * @throws IllegalStateException naming {@link #fencingToken(Object)}
	 */
	@Override
	default long fencingToken() {
		throw new IllegalStateException("These leases hold " + leases().size() + " keys, each with its own fencing "
				+ "token: call fencingToken(key) with the key of the resource you write, or leases()");
	}

}
