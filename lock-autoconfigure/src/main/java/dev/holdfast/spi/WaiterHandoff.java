package dev.holdfast.spi;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

/**
 * A backend that decides itself which waiter gets a released lock, by reservation:
 * <ol>
 * <li>a waiting acquisition records itself (its owner token, the same in all its attempts) with
 * each refused attempt, for a short time by the backend's clock;</li>
 * <li>the release of a lock with live records does not free it: it reserves it for one recorded
 * waiter, drawn at random, for a short window, and announces the reservation;</li>
 * <li>that waiter claims the lock with its own next attempt, which takes the fencing token as any
 * acquisition does; no other owner can take a reserved lock, and a try-once attempt (not
 * recorded) never does;</li>
 * <li>a reservation nobody claims expires after its window: a drawn waiter that died or left
 * costs the lock at most that window, never a lease.</li>
 * </ol>
 * A waiter that gives up {@linkplain #withdraw withdraws}: its records go, and a lock reserved
 * for it is reserved for the next recorded waiter (or freed). Owner tokens are never reused.
 */
public interface WaiterHandoff extends ReleaseEvents {

	/**
	 * {@link LockBackend#tryAcquire} for an acquisition that waits: takes the lock if it is free
	 * or reserved for {@code owner}; when refused, records {@code owner} as a waiter of
	 * {@code key} for {@code recordFor} by the backend's clock (each attempt records it again).
	 * @param key the full backend key
	 * @param owner a token unique to this waiting acquisition, the same in each of its attempts
	 * @param ttl how long the lock lives unless renewed
	 * @param recordFor how long the record lasts without another attempt
	 */
	AcquireResult tryAcquireWaiting(String key, String owner, Duration ttl, Duration recordFor);

	/**
	 * {@link #tryAcquireWaiting} without blocking, for a backend that is also an
	 * {@link AsyncLockBackend}; the default fails the stage.
	 */
	default CompletionStage<AcquireResult> tryAcquireWaitingAsync(String key, String owner, Duration ttl,
			Duration recordFor) {
		return CompletableFuture.failedFuture(new UnsupportedOperationException(
				"The " + getClass().getSimpleName() + " backend cannot acquire without blocking"));
	}

	/**
	 * {@link LockBackend#release}, that first records {@code nextLocal}, if not {@code null}: the
	 * releasing process's next waiter for the key, which may not have made its first attempt yet,
	 * so that it is drawn as often as any recorded waiter. A release that finds live records
	 * reserves the lock for one of them for the backend's reservation window and announces it
	 * (plain {@link LockBackend#release} does the same without naming a waiter).
	 * @return whether the lock was held by {@code owner} and is now released or reserved
	 */
	boolean release(String key, String owner, @Nullable String nextLocal);

	/**
	 * {@link #release(String, String, String)} without blocking, the outcome handed to
	 * {@code whenAnswered} as {@link AsyncLockBackend#releaseAsync(String, String, BiConsumer)}
	 * does; the default calls the blocking form.
	 */
	default void releaseAsync(String key, String owner, @Nullable String nextLocal,
			BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
		boolean released;
		try {
			released = release(key, owner, nextLocal);
		}
		catch (Throwable ex) {
			whenAnswered.accept(null, ex);
			return;
		}
		whenAnswered.accept(released, null);
	}

	/**
	 * {@code owner} waits no more: removes its records and, if the lock is reserved for it,
	 * reserves it for the next recorded waiter (or frees it), as a release would. Only for an
	 * owner whose acquisition ended without the lock. One attempt, as a release is; the engine
	 * retries it in the background when it fails.
	 * @return whether a record or a reservation of {@code owner} was found
	 */
	boolean withdraw(String key, String owner);

	/**
	 * {@link #withdraw} without blocking, for a backend that is also an {@link AsyncLockBackend};
	 * the default calls the blocking form.
	 */
	default CompletionStage<Boolean> withdrawAsync(String key, String owner) {
		try {
			return CompletableFuture.completedFuture(withdraw(key, owner));
		}
		catch (RuntimeException ex) {
			return CompletableFuture.failedFuture(ex);
		}
	}

	/**
	 * {@link #subscribe(Consumer)}, and also calls {@code reserved} for every reservation
	 * announced through this backend's channel, from any process. Both run on the client's I/O
	 * thread and must not block.
	 * @return a handle that stops both deliveries when closed
	 */
	AutoCloseable subscribe(Consumer<String> released, Reservations reserved);

	/** Listener of reservations: a release reserved a lock for a recorded waiter. */
	@FunctionalInterface
	interface Reservations {

		/** A release reserved {@code key} for {@code owner}, whose next attempt takes it. */
		void reserved(String key, String owner);

	}

}
