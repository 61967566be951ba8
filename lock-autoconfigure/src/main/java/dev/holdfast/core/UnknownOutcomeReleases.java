package dev.holdfast.core;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.LockBackend;

/**
 * Gives back locks that acquisitions with an unknown outcome may have taken. An acquisition that
 * failed with a timeout, a lost connection or an interrupt may still have run on the backend
 * (Redis ran the script, the database committed) after its caller gave up: the lock is then
 * held, for its whole lease, by an owner token that nobody keeps. After every failed acquisition
 * the engine sends an owner-checked release with that token, best effort and without blocking
 * the caller:
 * <ul>
 * <li>on an {@link AsyncLockBackend}, at once on the backend's own I/O (on Redis, the shared
 * connection, where it queues behind the acquisition: a script that runs late, after a pause or
 * a silent partition, is followed by its release);</li>
 * <li>otherwise on one daemon thread of the template, started when needed and ended when idle.</li>
 * </ul>
 * A release is sent again after 100 ms, doubling, until it releases the lock or
 * {@value #ATTEMPTS} attempts (~25 s) were made: an answer "not held" does not end it, because
 * the acquisition may still be on its way (on a database, the release can run on another
 * connection before the late statement commits; after a partition, TCP retransmits the
 * acquisition seconds after the heal). At most {@value #MAX_PENDING} releases are in
 * flight per template; beyond that the lock is left to expire by itself. Owner tokens are never
 * reused, so a late release can only remove the lock that its own acquisition took. Failures are
 * logged at DEBUG: the caller already had the acquisition's error.
 */
final class UnknownOutcomeReleases {

	static final int ATTEMPTS = 9;

	static final int MAX_PENDING = 1024;

	static final long FIRST_RETRY_MILLIS = 100;

	private static final Log logger = LogFactory.getLog(UnknownOutcomeReleases.class);

	private final LockBackend backend;

	private final long firstRetryMillis;

	private final AtomicInteger pending = new AtomicInteger();

	private final ThreadPoolExecutor blocking;

	UnknownOutcomeReleases(LockBackend backend) {
		this(backend, FIRST_RETRY_MILLIS);
	}

	/** With another first retry delay, for tests (the schedule doubles from it as from 100 ms). */
	UnknownOutcomeReleases(LockBackend backend, long firstRetryMillis) {
		this.backend = backend;
		this.firstRetryMillis = firstRetryMillis;
		// One thread at most, started on demand and ended after a second idle; the queue is
		// bounded by MAX_PENDING.
		this.blocking = new ThreadPoolExecutor(1, 1, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), (task) -> {
			Thread thread = new Thread(task, "holdfast-unknown-outcome-release");
			thread.setDaemon(true);
			return thread;
		});
		this.blocking.allowCoreThreadTimeOut(true);
	}

	/**
	 * Releases {@code key} for {@code owner} if the failed acquisition took it; returns at once.
	 */
	void release(String key, String owner) {
		if (this.pending.incrementAndGet() > MAX_PENDING) {
			this.pending.decrementAndGet();
			logger.debug("Not releasing lock '" + key + "' after a failed acquisition: " + MAX_PENDING
					+ " such releases are in flight; if the acquisition took it, it expires by itself");
			return;
		}
		attempt(key, owner, 1);
	}

	/** Releases in flight, for tests. */
	int pending() {
		return this.pending.get();
	}

	/** Stops the thread of blocking releases; releases still queued are dropped. */
	void shutdown() {
		this.blocking.shutdownNow();
	}

	private void attempt(String key, String owner, int attempt) {
		CompletionStage<Boolean> answer;
		try {
			answer = send(key, owner);
		}
		catch (RuntimeException ex) {
			answer = CompletableFuture.failedFuture(ex);
		}
		answer.whenComplete((released, ex) -> {
			if (Boolean.TRUE.equals(released)) {
				this.pending.decrementAndGet();
				logger.debug("Released lock '" + key + "' that a failed acquisition had taken");
				return;
			}
			if (attempt >= ATTEMPTS || this.blocking.isShutdown()) {
				this.pending.decrementAndGet();
				if (ex != null) {
					logger.debug("Could not release lock '" + key + "' after a failed acquisition (" + attempt
							+ " attempts); if the acquisition took it, it expires by itself", ex);
				}
				return;
			}
			long delay = this.firstRetryMillis << (attempt - 1);
			// attempt() never blocks: it sends, or queues for the blocking thread.
			CompletableFuture.delayedExecutor(delay, TimeUnit.MILLISECONDS, Runnable::run)
				.execute(() -> attempt(key, owner, attempt + 1));
		});
	}

	private CompletionStage<Boolean> send(String key, String owner) {
		if (this.backend instanceof AsyncLockBackend async) {
			return async.releaseAsync(key, owner);
		}
		CompletableFuture<Boolean> answer = new CompletableFuture<>();
		try {
			this.blocking.execute(() -> {
				try {
					answer.complete(this.backend.release(key, owner));
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

}
