package dev.holdfast.spi;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

/**
 * A backend that decides itself who gets a released lock: a waiting acquisition records itself
 * (its owner token and lease time) with each refused attempt, and the release of a lock with
 * recorded waiters makes one of them, drawn at random, the holder: the lock is set to that
 * waiter's owner with its lease time and a fencing token taken as an acquisition takes one, and
 * the grant, which carries the token, is announced. The engine gives such a backend one owner
 * token per waiting acquisition (the same in every attempt); a waiter that hears its grant holds
 * the lock without another call, and one that gives up withdraws.
 * <p>
 * An attempt by an owner that already holds the lock (a grant it has not heard) is acquired
 * again, idempotently, with the current fencing token, so a lost grant is made good by the
 * waiter's next poll. {@link #withdraw} hands on a lock held by the withdrawing owner: the
 * engine withdraws only an owner whose acquisition ended without the lock, and owner tokens are
 * never reused, so a withdrawal never takes a lock from a holder in use.
 */
public interface WaiterHandoff extends ReleaseEvents {

	/**
	 * {@link LockBackend#tryAcquire}, for an acquisition that waits: takes the lock if it is free,
	 * and acquires it again (its lease time reset, the current fencing token) if a release handed
	 * it to {@code owner}; when refused, records {@code owner} and {@code ttl} as a waiter of
	 * {@code key} for {@code recordFor} (by the backend's clock; each attempt records it again).
	 * @param key the full backend key
	 * @param owner a token unique to this waiting acquisition, the same in each of its attempts
	 * @param ttl how long the lock lives unless renewed; the same in each attempt
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
	 * {@link LockBackend#release}, that first records {@code localWaiter}, if not {@code null},
	 * with its lease time {@code localWaiterTtl}, for {@code recordFor}: the releasing process's
	 * next waiter for the key, which may not have made its first attempt yet, so that it is drawn
	 * as any recorded waiter is. A backend that does so also when no other waiter is recorded
	 * says so with {@link #handsUnmarkedLockToLocalWaiter()}. When the lock goes to
	 * {@code localWaiter}, the backend tells its grant listeners at once, from the answer (with
	 * the fencing token); no other process needs to hear of that grant, so a backend need not
	 * announce it.
	 * @return whether the lock was held by {@code owner} and is now released (or handed on)
	 */
	boolean release(String key, String owner, @Nullable String localWaiter, @Nullable Duration localWaiterTtl,
			Duration recordFor);

	/**
	 * {@link #release(String, String, String, Duration, Duration)} without blocking, the outcome
	 * handed to {@code whenAnswered} as
	 * {@link AsyncLockBackend#releaseAsync(String, String, BiConsumer)} does; the default calls the
	 * blocking form.
	 */
	default void releaseAsync(String key, String owner, @Nullable String localWaiter,
			@Nullable Duration localWaiterTtl, Duration recordFor,
			BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
		boolean released;
		try {
			released = release(key, owner, localWaiter, localWaiterTtl, recordFor);
		}
		catch (Throwable ex) {
			whenAnswered.accept(null, ex);
			return;
		}
		whenAnswered.accept(released, null);
	}

	/**
	 * Whether {@link #release(String, String, String, Duration, Duration)} hands the lock to the
	 * named {@code localWaiter} also when no waiter is recorded (a lock nobody else asked for):
	 * then the engine's racer sends no attempt while its own process validly holds the key (the
	 * attempt would only be refused) and relies on that release to make it the holder. A backend
	 * that records {@code localWaiter} only beside other waiters answers {@code false}, the
	 * default: there the racer's refused attempt is what marks the lock as wanted. A backend that
	 * answers {@code true} never deletes the lock on a release that names a {@code localWaiter}
	 * and succeeds: it hands it to one recorded waiter, the named one included, so the engine
	 * reads such a release as "handed on".
	 * @return whether an unmarked lock is handed to the releasing process's named next waiter
	 */
	default boolean handsUnmarkedLockToLocalWaiter() {
		return false;
	}

	/**
	 * {@code owner} waits no more: removes its record and, if a release handed the lock to it (or
	 * reserved it for it), hands the lock on as a release would. Only for an owner whose
	 * acquisition ended without the lock and never takes it: a lock held by it is nobody's in
	 * use. Never blocks and never throws: sent in the background; if it fails, the record expires
	 * by itself and a lock handed to the owner with its lease time.
	 */
	void withdraw(String key, String owner);

	/**
	 * {@link #subscribe(Consumer)}, and also calls {@code granted} for every grant through this
	 * backend's channel, from any process. Both run on the client's I/O thread and must not block.
	 * @return a handle that stops both deliveries when closed
	 */
	AutoCloseable subscribe(Consumer<String> released, Grants granted);

	/** Listener of grants: a release gave a lock to a recorded waiter. */
	@FunctionalInterface
	interface Grants {

		/**
		 * A release made {@code owner} the holder of {@code key} under {@code fencingToken}; a
		 * token of 0 means the lock is only reserved for it (a record of an earlier version, or
		 * of a backend that acknowledges acquisitions on replicas): its next attempt takes it.
		 */
		void granted(String key, String owner, long fencingToken);

	}

}
