package dev.holdfast.spi;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.function.BiConsumer;

import org.jspecify.annotations.Nullable;

/**
 * A backend that can acquire and release without blocking the calling thread: each method
 * sends its request and returns at once, and the returned stage completes when the backend
 * answered. The engine uses it for {@code Mono}/{@code Flux} methods, which must never block a
 * Reactor thread; without it, their acquisitions run on a blocking-friendly scheduler.
 * <p>
 * The semantics are those of {@link LockBackend#tryAcquire} and {@link LockBackend#release}: one
 * attempt, one round trip, a bounded network timeout. Failures complete the stage exceptionally,
 * preferably with {@link dev.holdfast.LockBackendException}; they are never thrown from the call.
 * Stages may complete on the client's I/O threads: the engine does not block in its callbacks.
 */
public interface AsyncLockBackend extends LockBackend {

	/**
	 * Takes the lock if no live owner holds it, in one round trip, without blocking.
	 * @param key the full backend key
	 * @param owner a token unique to this acquisition
	 * @param ttl how long the lock lives unless renewed
	 * @return a stage that completes with the outcome of the attempt
	 */
	CompletionStage<AcquireResult> tryAcquireAsync(String key, String owner, Duration ttl);

	/**
	 * Deletes the lock if {@code owner} still holds it, in one round trip, without blocking, and
	 * wakes waiters where the backend can.
	 * @return a stage that completes with whether the lock was held by {@code owner} and is now
	 * released
	 */
	CompletionStage<Boolean> releaseAsync(String key, String owner);

	/**
	 * {@link #releaseAsync(String, String)} with the outcome handed to {@code whenAnswered}
	 * instead of a stage: called exactly once, with whether the lock was released or with the
	 * failure, possibly on the client's I/O thread; never throws. The engine releases every lease
	 * this way. The default completes it from the stage; a backend may call it straight from its
	 * client's reply, without a stage of its own.
	 */
	default void releaseAsync(String key, String owner,
			BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
		CompletionStage<Boolean> answer;
		try {
			answer = releaseAsync(key, owner);
		}
		catch (Throwable ex) {
			whenAnswered.accept(null, ex);
			return;
		}
		answer.whenComplete(whenAnswered);
	}

}
