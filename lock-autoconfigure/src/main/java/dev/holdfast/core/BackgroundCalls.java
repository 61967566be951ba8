package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.WaiterHandoff;

/**
 * The owner-checked calls a template sends in the background, each retried on one schedule
 * (100 ms, doubling, {@value #ATTEMPTS} attempts, about 25 s), bounded ({@value #MAX_PENDING}
 * pending) and counted: a release after an acquisition failed with an unknown outcome (until it
 * releases the lock, also after "not held": the acquisition may still be on its way), a failed
 * release, a granted read hold given back and a waiter's withdrawal (until answered). A call may
 * wait for a stage first (a read lease's release, RWL-18); it counts as pending from when it is
 * submitted. They go through the backend's non-blocking I/O where it has one, else one daemon
 * thread started when needed. A call given up (too many pending, or every attempt failed) is
 * logged at WARN: its lock or record expires by itself.
 * Owner tokens are never reused, so a late call can only touch what its own acquisition did.
 */
final class BackgroundCalls {

	static final int ATTEMPTS = 9;

	static final int MAX_PENDING = 1024;

	static final long FIRST_RETRY_MILLIS = 100;

	private static final Log logger = LogFactory.getLog(BackgroundCalls.class);

	private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

	private final LockBackend backend;

	private final Failures failures;

	private final long firstRetryMillis;

	private final AtomicInteger pending = new AtomicInteger();

	private final AtomicLong givenUp = new AtomicLong();

	private final ThreadPoolExecutor blocking;

	private volatile boolean closed;

	/** While the template drains: a release of unknown outcome ends at its next answer. */
	private volatile boolean draining;

	BackgroundCalls(LockBackend backend, Failures failures) {
		this(backend, failures, FIRST_RETRY_MILLIS);
	}

	/** With another first retry delay, for tests (the schedule doubles from it as from 100 ms). */
	BackgroundCalls(LockBackend backend, Failures failures, long firstRetryMillis) {
		this.backend = backend;
		this.failures = failures;
		this.firstRetryMillis = firstRetryMillis;
		// One thread at most, started on demand and ended after a second idle; the queue is bounded
		// by MAX_PENDING. Calls may run out of the order queued (one queued as the thread ends can go
		// after a later one): none depends on another, each owner-checked by its own token.
		this.blocking = new ThreadPoolExecutor(1, 1, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), (task) -> {
			Thread thread = new Thread(task, "holdfast-background-" + failures.backendName());
			thread.setDaemon(true);
			return thread;
		});
		this.blocking.allowCoreThreadTimeOut(true);
	}

	/** Releases {@code key} for {@code owner} in case its failed acquisition took it; returns at once. */
	void releaseUnknownOutcome(String key, String owner) {
		releaseUnknownOutcomeAfter(DONE, key, owner);
	}

	/** {@link #releaseUnknownOutcome} once {@code before} completed; pending from now. */
	void releaseUnknownOutcomeAfter(CompletionStage<?> before, String key, String owner) {
		submit(before, new Call("release after a failed acquisition", key, () -> release(key, owner), true));
	}

	/**
	 * Gives back a read hold of {@code key} the backend granted {@code owner} (RWL-18): a plain
	 * release, resent only on failure (its outcome is known, so "not held" is final); returns at once.
	 */
	void giveBack(String key, String owner) {
		giveBackAfter(DONE, key, owner);
	}

	/**
	 * {@link #giveBack} once {@code before} completed; pending from now, so that a drain waits for it
	 * also while {@code before}'s completion has not reached it yet.
	 */
	void giveBackAfter(CompletionStage<?> before, String key, String owner) {
		submit(before, new Call("give-back of a granted read hold", key, () -> release(key, owner), false));
	}

	/** Sends again a release of {@code key} for {@code owner} that failed; returns at once. */
	void retryRelease(String key, String owner) {
		submit(DONE, new Call("release", key, () -> release(key, owner), false));
	}

	/** Withdraws {@code owner}, a waiter of {@code key} that gave up; returns at once. */
	void withdraw(String key, String owner) {
		WaiterHandoff handoff = (WaiterHandoff) this.backend;
		Supplier<CompletionStage<Boolean>> send = (this.backend instanceof AsyncLockBackend)
				? () -> handoff.withdrawAsync(key, owner) : () -> blocking(() -> handoff.withdraw(key, owner));
		submit(DONE, new Call("withdrawal", key, send, false));
	}

	/**
	 * The template drains (or takes acquisitions again): a release after a failed acquisition is
	 * no longer sent again after an answer "not held", so that the shutdown does not wait ~25 s
	 * for an acquisition that will most likely never land.
	 */
	void draining(boolean draining) {
		this.draining = draining;
	}

	/** Calls pending (sent, or waiting for a retry). */
	int pending() {
		return this.pending.get();
	}

	/** Calls given up since the template started (too many pending, or every attempt failed). */
	long givenUp() {
		return this.givenUp.get();
	}

	/**
	 * Waits until no call is pending, at most {@code timeout}.
	 * @return whether none is pending any more
	 */
	boolean awaitIdle(Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (this.pending.get() > 0) {
			if (deadline - System.nanoTime() <= 0) {
				return false;
			}
			TimeUnit.MILLISECONDS.sleep(1);
		}
		return true;
	}

	/** Gives up the calls still pending (each its last attempt) and ends the thread of blocking calls. */
	void close() {
		this.closed = true;
		this.blocking.shutdownNow();
	}

	/** Counts {@code call} pending now and sends it once {@code before} completed (whether or not it failed). */
	private void submit(CompletionStage<?> before, Call call) {
		if (this.pending.incrementAndGet() > MAX_PENDING) {
			this.pending.decrementAndGet();
			givenUp(call, MAX_PENDING + " background calls are pending", null);
			return;
		}
		before.whenComplete((answered, ex) -> call.attempt(1));
	}

	private void givenUp(Call call, String why, Throwable ex) {
		this.givenUp.incrementAndGet();
		logger.warn("Holdfast gave up the " + call.what + " of lock '" + this.failures.shown(call.key) + "' ("
				+ why + "); the lock or waiter record expires on the " + this.failures.backendName()
				+ " backend by itself", (ex != null) ? this.failures.of(ex, call.what, call.key) : null);
	}

	private CompletionStage<Boolean> release(String key, String owner) {
		return (this.backend instanceof AsyncLockBackend async) ? async.releaseAsync(key, owner)
				: blocking(() -> this.backend.release(key, owner));
	}

	private CompletionStage<Boolean> blocking(Supplier<Boolean> call) {
		CompletableFuture<Boolean> answer = new CompletableFuture<>();
		try {
			this.blocking.execute(() -> {
				try {
					answer.complete(call.get());
				}
				catch (RuntimeException | Error ex) {
					answer.completeExceptionally(ex);
				}
			});
		}
		catch (RuntimeException rejected) {
			answer.completeExceptionally(rejected);
		}
		return answer;
	}

	/** One call and its attempts; {@code untilReleased}: an answer "not held" does not end it. */
	private final class Call {

		final String what;

		final String key;

		final Supplier<CompletionStage<Boolean>> send;

		final boolean untilReleased;

		Call(String what, String key, Supplier<CompletionStage<Boolean>> send, boolean untilReleased) {
			this.what = what;
			this.key = key;
			this.send = send;
			this.untilReleased = untilReleased;
		}

		void attempt(int attempt) {
			CompletionStage<Boolean> answer;
			try {
				answer = this.send.get();
			}
			catch (RuntimeException ex) {
				answer = CompletableFuture.failedFuture(ex);
			}
			answer.whenComplete((done, ex) -> {
				if (ex == null && (!this.untilReleased || Boolean.TRUE.equals(done) || BackgroundCalls.this.draining)) {
					BackgroundCalls.this.pending.decrementAndGet();
					return;
				}
				if (attempt >= ATTEMPTS || BackgroundCalls.this.closed) {
					BackgroundCalls.this.pending.decrementAndGet();
					if (ex != null) {
						givenUp(this, attempt + " attempts failed", ex);
					}
					return;
				}
				long delay = BackgroundCalls.this.firstRetryMillis << (attempt - 1);
				// attempt() never blocks: it sends, or queues for the blocking thread.
				CompletableFuture.delayedExecutor(delay, TimeUnit.MILLISECONDS, Runnable::run)
					.execute(() -> attempt(attempt + 1));
			});
		}

	}

}
