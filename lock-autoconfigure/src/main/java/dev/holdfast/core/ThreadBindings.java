package dev.holdfast.core;

import java.time.Instant;
import java.util.ArrayDeque;
import java.util.Deque;

import org.jspecify.annotations.Nullable;

import dev.holdfast.Lease;

/**
 * What Holdfast binds to the thread that runs locked code: the leases of the locked methods
 * running on it, innermost first, and the tick of the cron job running on it. Applications read
 * them through {@link dev.holdfast.LockContext} and {@link dev.holdfast.ScheduledTick}; only the
 * interceptor and the scheduler bind them.
 */
public final class ThreadBindings {

	private static final ThreadLocal<Deque<Lease>> LEASES = ThreadLocal.withInitial(ArrayDeque::new);

	private static final ThreadLocal<Instant> TICK = new ThreadLocal<>();

	private ThreadBindings() {
	}

	/** The lease of the innermost locked method on this thread, or {@code null}. */
	public static @Nullable Lease currentLease() {
		return LEASES.get().peek();
	}

	/** Binds {@code lease} to this thread until the returned binding is closed. */
	public static Binding bind(Lease lease) {
		Deque<Lease> leases = LEASES.get();
		leases.push(lease);
		return () -> {
			leases.remove(lease);
			if (leases.isEmpty()) {
				LEASES.remove();
			}
		};
	}

	/** The nominal fire time of the cron tick running on this thread, or {@code null}. */
	public static @Nullable Instant currentTick() {
		return TICK.get();
	}

	/** Runs {@code action} with {@code tick} bound to this thread. */
	public static void runAtTick(Instant tick, Runnable action) {
		TICK.set(tick);
		try {
			action.run();
		}
		finally {
			TICK.remove();
		}
	}

	/** A binding of a lease to a thread; closing it unbinds. */
	@FunctionalInterface
	public interface Binding extends AutoCloseable {

		@Override
		void close();

	}

}
