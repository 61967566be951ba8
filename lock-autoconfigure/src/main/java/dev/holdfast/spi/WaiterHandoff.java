package dev.holdfast.spi;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

/**
 * A backend that decides itself who gets a released lock: a waiting acquisition records itself
 * with each refused attempt, and the release of a lock with recorded waiters hands it to one of
 * them, drawn at random. The lock is then reserved for that waiter for a claim window and the
 * grant is announced; only the reserved waiter's next attempt takes it, every other attempt is
 * refused. The engine gives such a backend one owner token per waiting acquisition (the same in
 * every attempt), wakes the waiter a grant names, and withdraws a waiter that gives up.
 * <p>
 * A reservation is never a lock held by its waiter: {@link #withdraw} passes a reservation on but
 * never touches a lock its owner took, so a withdrawal that crosses a successful claim cannot
 * release a lock in use.
 */
public interface WaiterHandoff extends ReleaseEvents {

	/**
	 * {@link LockBackend#tryAcquire}, for an acquisition that waits: takes the lock if it is free
	 * or reserved for {@code owner}; when refused, records {@code owner} as a waiter of {@code key}
	 * for {@code recordFor} (by the backend's clock; each attempt records it again).
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
	 * {@link LockBackend#release}, that first records {@code localWaiter}, if not {@code null}, for
	 * {@code recordFor}: the releasing process's next waiter for the key, which may not have made
	 * its first attempt yet, so that it is drawn as any recorded waiter is. When the lock goes to
	 * {@code localWaiter}, the backend tells its grant listeners at once, from the answer, without
	 * waiting for the announcement.
	 * @return whether the lock was held by {@code owner} and is now released (or handed on)
	 */
	boolean release(String key, String owner, @Nullable String localWaiter, Duration recordFor);

	/**
	 * {@link #release(String, String, String, Duration)} without blocking, the outcome handed to
	 * {@code whenAnswered} as {@link AsyncLockBackend#releaseAsync(String, String, BiConsumer)}
	 * does; the default calls the blocking form.
	 */
	default void releaseAsync(String key, String owner, @Nullable String localWaiter, Duration recordFor,
			BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
		boolean released;
		try {
			released = release(key, owner, localWaiter, recordFor);
		}
		catch (Throwable ex) {
			whenAnswered.accept(null, ex);
			return;
		}
		whenAnswered.accept(released, null);
	}

	/**
	 * {@code owner} waits no more: removes its record and, if the lock is reserved for it, hands
	 * the lock on as a release would. A lock that {@code owner} took is left alone. Never blocks
	 * and never throws: sent in the background; if it fails, the record expires by itself and the
	 * reservation after its claim window.
	 */
	void withdraw(String key, String owner);

	/**
	 * {@link #subscribe(Consumer)}, and also calls {@code granted} with the key and the waiter's
	 * owner token of every grant through this backend's channel, from any process. Both run on the
	 * client's I/O thread and must not block.
	 * @return a handle that stops both deliveries when closed
	 */
	AutoCloseable subscribe(Consumer<String> released, BiConsumer<String, String> granted);

}
