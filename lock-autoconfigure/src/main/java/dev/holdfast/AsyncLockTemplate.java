package dev.holdfast;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import org.jspecify.annotations.Nullable;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;

/**
 * A {@link LockTemplate} that can also acquire and release without blocking the calling thread,
 * for reactive and future-returning code. Leases acquired here are never bound to a thread: they
 * are not reentrant by thread, and the caller passes them on explicitly (Holdfast's own reactive
 * support puts them in the Reactor context).
 */
public interface AsyncLockTemplate extends LockTemplate {

	/**
	 * Whether {@link #tryAcquireAsync} and {@link #releaseAsync} are non-blocking with this
	 * template's backend. When {@code false}, callers must acquire with the blocking methods on
	 * a thread that may block.
	 */
	boolean supportsNonBlocking();

	/**
	 * Acquires the lock without blocking a thread: attempts and waits (up to the wait time) are
	 * callbacks and timers. The future completes with the lease, with {@code null} if the lock
	 * stayed held by another owner for the wait time, or exceptionally with
	 * {@link dev.holdfast.LockBackendException}. Cancelling the future stops the attempts; a
	 * lease acquired while it was being cancelled is released, never leaked.
	 * @throws UnsupportedOperationException if {@link #supportsNonBlocking()} is {@code false}
	 */
	CompletableFuture<@Nullable Lease> tryAcquireAsync(String name, @Nullable Object key, LockOptions options);

	/**
	 * Closes {@code lease} like {@link Lease#close()}, without blocking where the backend allows
	 * it. The stage completes when the backend answered the release (at once for a hold that was
	 * not the last one), so this is also the way to wait for a release that {@code close()} would
	 * send in the background. It never completes exceptionally: a release that cannot reach the
	 * backend is logged and counted, and the lock expires after its time to live.
	 */
	CompletionStage<Void> releaseAsync(Lease lease);

	/** The wait time that an acquisition with {@code options} uses: theirs, or the default. */
	Duration waitTime(LockOptions options);

	/** The backend key of a lock, {@code <prefix><name>[:<encoded key>]}. */
	String keyFor(String name, @Nullable Object key);

	/**
	 * A backend key as log lines and exception messages show it: with its key part (method
	 * arguments, often user data) masked unless {@code holdfast.show-key-values} is on.
	 */
	default String shownKey(String key) {
		return key;
	}

}
