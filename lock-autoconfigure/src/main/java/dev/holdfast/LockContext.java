package dev.holdfast;

import java.util.Optional;

import dev.holdfast.core.ThreadBindings;

/**
 * The lease of the innermost {@link DistributedLock} method running on the current thread, or of
 * the {@link SingleInstanceScheduled} job running on it (its job lock).
 * <p>
 * Inside an annotated method:
 * <pre>{@code
 * long token = LockContext.requireLease().fencingToken();
 * }</pre>
 * The lease is the method's view of the lock: closing it (try-with-resources included) makes the
 * view invalid and never releases the lock while the method runs; the lock is released when the
 * method's work is done. For methods returning {@code Mono} or {@code Flux} the lease is in the
 * Reactor context under the key {@code Lease.class}, not on a thread.
 */
public final class LockContext {

	private LockContext() {
	}

	/** The lease of the innermost locked method on this thread, if any. */
	public static Optional<Lease> currentLease() {
		return Optional.ofNullable(ThreadBindings.currentLease());
	}

	/**
	 * The lease of the innermost locked method on this thread.
	 * @throws IllegalStateException when called outside a locked method; when an annotated method
	 * that was called without its proxy (self-invocation, {@code this.method()}) is on the stack,
	 * the message names it and the fix
	 */
	public static Lease requireLease() {
		Lease lease = ThreadBindings.currentLease();
		if (lease == null) {
			throw new IllegalStateException(UnlockedCall.message());
		}
		return lease;
	}

	/**
	 * The leases of the innermost locked method on this thread, when it locks several keys
	 * ({@code @DistributedLock(keys = ...)}).
	 * @throws IllegalStateException outside a locked method (as {@link #requireLease()}), or inside
	 * one that locks a single key, naming {@link #requireLease()}
	 */
	public static Leases requireLeases() {
		Lease lease = requireLease();
		if (!(lease instanceof Leases leases)) {
			throw new IllegalStateException("The innermost locked method on this thread holds one key, not "
					+ "several: use LockContext.requireLease(), or declare @DistributedLock(keys = ...)");
		}
		return leases;
	}

}
