package dev.holdfast;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Optional;

/**
 * The lease of the innermost {@link DistributedLock} method running on the current thread, or of
 * the {@link SingleInstanceScheduled} job running on it (its job lock).
 * <p>
 * Inside an annotated method:
 * <pre>{@code
 * long token = LockContext.requireLease().fencingToken();
 * }</pre>
 * For methods returning {@code Mono} or {@code Flux} the lease is in the Reactor context
 * under the key {@code Lease.class}, not on a thread.
 */
public final class LockContext {

	private static final ThreadLocal<Deque<Lease>> LEASES = ThreadLocal.withInitial(ArrayDeque::new);

	private LockContext() {
	}

	/** The lease of the innermost locked method on this thread, if any. */
	public static Optional<Lease> currentLease() {
		return Optional.ofNullable(LEASES.get().peek());
	}

	/**
	 * The lease of the innermost locked method on this thread.
	 * @throws IllegalStateException when called outside a locked method
	 */
	public static Lease requireLease() {
		Lease lease = LEASES.get().peek();
		if (lease == null) {
			throw new IllegalStateException("No Holdfast lease is bound to this thread: call this from a method "
					+ "annotated with @DistributedLock or @SingleInstanceScheduled, or use the Lease returned by "
					+ "LockTemplate");
		}
		return lease;
	}

	/**
	 * Binds {@code lease} to this thread until the returned scope is closed. For Holdfast's own
	 * interceptors; application code has no need to call it.
	 */
	public static Scope bind(Lease lease) {
		Deque<Lease> leases = LEASES.get();
		leases.push(lease);
		return () -> {
			leases.remove(lease);
			if (leases.isEmpty()) {
				LEASES.remove();
			}
		};
	}

	/** A binding of a lease to a thread; closing it unbinds. */
	@FunctionalInterface
	public interface Scope extends AutoCloseable {

		@Override
		void close();

	}

}
