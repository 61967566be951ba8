package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.jspecify.annotations.Nullable;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockListener;
import dev.holdfast.LockListener.LockObservation;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.WaitQueue;
import dev.holdfast.spi.WaiterHandoff;

/**
 * How a template acquires: one state machine ({@link Acquisition}) with two thin drivers, a
 * blocking one that waits on its thread and a non-blocking one whose waits are callbacks. The
 * rules, the same for both:
 * <ol>
 * <li>A try-once acquisition (no wait time) makes one attempt. One that waits joins its key's
 * {@linkplain Lines line} and attempts only as its head.</li>
 * <li>Each acquisition has one owner token for all its attempts. On a backend that records
 * waiters ({@link WaiterHandoff}) a waiting acquisition's attempts record it; a release then
 * reserves the lock for a drawn recorded waiter, whose reservation wakes it.</li>
 * <li>After a refusal it waits for a wake-up or a jittered pause that grows to the poll interval
 * (from 5 ms on a backend without release events, or while the subscription is not listening
 * yet), never longer than the holder's remaining time to live nor the wait time left. A wake-up
 * that comes while an attempt is in flight is kept: the next wait ends at once.</li>
 * <li>A refusal while this template's own release of the key was in flight (when the attempt
 * was sent, or now) waits for that release's answer, at most until the released lease would
 * have expired, and attempts again at once (after the deadline, once).</li>
 * <li>An attempt that failed may still have taken the lock: it is released in the background,
 * owner-checked ({@link BackgroundCalls}); the acquisition fails with a
 * {@link LockBackendException}.</li>
 * <li>An acquisition that ends without the lock leaves its line and, if it may have been
 * recorded, withdraws; one that took the lock after it ended (a cancelled non-blocking one)
 * gives it back, never registered.</li>
 * <li>A backend with a {@link WaitQueue} of its own gets the whole wait in one attempt.</li>
 * </ol>
 */
final class Acquisitions {

	private static final long MIN_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

	/** The longest pause between attempts while release events are not delivered yet. */
	private static final long NOT_LISTENING_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

	private final LockBackend backend;

	private final @Nullable AsyncLockBackend async;

	private final @Nullable WaiterHandoff handoff;

	private final @Nullable WaitQueue queue;

	private final Lines lines;

	private final LocalLeases leases;

	private final BackgroundCalls background;

	private final Failures failures;

	private final LockListener listener;

	private final OwnerTokens owners = new OwnerTokens();

	private final long pollNanos;

	/** How long a waiter's record lasts without another attempt: two poll intervals. */
	private final long recordForNanos;

	private final Executor executor = ForkJoinPool.commonPool();

	private volatile boolean draining;

	Acquisitions(LockBackend backend, Lines lines, LocalLeases leases, BackgroundCalls background, Failures failures,
			LockListener listener, Duration pollInterval) {
		this.backend = backend;
		this.async = (backend instanceof AsyncLockBackend asyncBackend) ? asyncBackend : null;
		this.handoff = (backend instanceof WaiterHandoff waiterHandoff) ? waiterHandoff : null;
		this.queue = (backend instanceof WaitQueue waitQueue) ? waitQueue : null;
		this.lines = lines;
		this.leases = leases;
		this.background = background;
		this.failures = failures;
		this.listener = listener;
		this.pollNanos = pollInterval.toNanos();
		this.recordForNanos = pollInterval.toNanos() * 2;
	}

	/**
	 * Acquires {@code key} on the calling thread, waiting at most {@code wait}.
	 * @return the registered lease, or {@code null} if the lock stayed held for the wait time
	 * @throws InterruptedException if the thread was interrupted while waiting or during a backend call
	 * @throws LockBackendException if the backend failed, or the template is shutting down
	 */
	@Nullable HeldLease acquire(String name, String key, Duration ttl, boolean renew, Duration wait)
			throws InterruptedException {
		LockObservation observation = this.listener.acquiring(name, key, this.failures.backendName());
		Blocking acquisition = new Blocking(name, key, ttl, renew, wait, observation);
		try {
			HeldLease lease = acquisition.run();
			if (lease == null) {
				observation.notAcquired();
				this.listener.notAcquired(name, this.failures.backendName(), acquisition.waited());
			}
			else if (this.listener != LockListener.NONE) {
				this.listener.acquired(name, this.failures.backendName(), acquisition.waited());
			}
			return lease;
		}
		catch (InterruptedException ex) {
			observation.cancelled();
			throw ex;
		}
		catch (LockBackendException ex) {
			observation.failed(ex);
			this.listener.failed(name, this.failures.backendName(), acquisition.waited(), ex);
			throw ex;
		}
		catch (RuntimeException | Error ex) {
			observation.failed(ex);
			throw ex;
		}
	}

	/**
	 * Acquires {@code key} without blocking (an {@link AsyncLockBackend} only): the future
	 * completes with a lease bound to no thread, with {@code null} if the lock stayed held for
	 * the wait time, or exceptionally; cancelling it ends the acquisition.
	 */
	CompletableFuture<@Nullable Lease> acquireAsync(String name, String key, Duration ttl, boolean renew,
			Duration wait) {
		LockObservation observation = this.listener.acquiring(name, key, this.failures.backendName());
		NonBlocking acquisition = new NonBlocking(name, key, ttl, renew, wait, observation);
		acquisition.start();
		return acquisition.result;
	}

	/**
	 * Refuses new acquisitions and ends the waiting ones (they fail as shutting down, leave their
	 * lines and withdraw), or takes acquisitions again.
	 */
	void draining(boolean draining) {
		this.draining = draining;
		if (draining) {
			this.lines.wakeAll();
		}
	}

	boolean isDraining() {
		return this.draining;
	}

	LockBackendException shuttingDown(String key) {
		return new LockBackendException(
				"Holdfast is shutting down: lock '" + this.failures.shown(key) + "' was not acquired", null);
	}

	private static long jitter(long nanos) {
		return nanos / 2 + ThreadLocalRandom.current().nextLong(nanos / 2 + 1);
	}

	/** One acquisition: the state and the rules both drivers share. */
	abstract class Acquisition {

		final String name;

		final String key;

		final String owner = Acquisitions.this.owners.next();

		final Duration ttl;

		final boolean renew;

		final LockObservation observation;

		final long start = System.nanoTime();

		final long deadline;

		/** Whether it waits, and so queues in its key's line. */
		final boolean waits;

		/** Whether its attempts record it as a waiter on the backend. */
		final boolean records;

		/** Whether it has been the head of its line: a release may have named (recorded) it. */
		volatile boolean wasHead;

		/** The backend failure that ended this acquisition, or the one ahead of it in its line. */
		volatile @Nullable LockBackendException failure;

		/** Confined to the attempt in progress: attempts never overlap. */
		private boolean notifying = Acquisitions.this.lines.announcing();

		private long pause = initialPause(this.notifying);

		private boolean retriedOwnRelease;

		Acquisition(String name, String key, Duration ttl, boolean renew, Duration wait, LockObservation observation) {
			this.name = name;
			this.key = key;
			this.ttl = ttl;
			this.renew = renew;
			this.observation = observation;
			this.deadline = this.start + wait.toNanos();
			this.waits = wait.toNanos() > 0;
			this.records = this.waits && Acquisitions.this.handoff != null;
		}

		/** Wakes this acquisition's wait (for the head of its line, or for a release). */
		abstract void wake();

		/** The head of its line failed on the backend while this one waited behind it: it fails too. */
		final void failedAhead(RuntimeException ahead) {
			this.failure = new LockBackendException("The " + Acquisitions.this.failures.backendName()
					+ " backend failed for the acquisition ahead of this one in the line of lock '"
					+ Acquisitions.this.failures.shown(this.key) + "': " + ahead.getMessage(), ahead);
			wake();
		}

		/** Joins its line; true when it is the head (and attempts) now. */
		final boolean join() {
			return Acquisitions.this.lines.join(this) && becameHead();
		}

		/** Whether it is its line's head now; if so, it listens to release events from now on. */
		final boolean becameHead() {
			if (!this.wasHead) {
				if (!Acquisitions.this.lines.isHead(this)) {
					return false;
				}
				this.wasHead = true;
				Acquisitions.this.lines.subscribed();
			}
			return true;
		}

		/** How long each attempt records this waiter: two poll intervals, or the wait left (10 ms steps). */
		final Duration recordFor() {
			long left = this.deadline - System.nanoTime();
			long full = Acquisitions.this.recordForNanos;
			if (left >= full) {
				return Duration.ofNanos(full);
			}
			long millis = Math.max(10, (TimeUnit.NANOSECONDS.toMillis(Math.max(left, 0)) + 9) / 10 * 10);
			return Duration.ofMillis(Math.min(millis, TimeUnit.NANOSECONDS.toMillis(full)));
		}

		final HeldLease took(long token, long sentNanos) {
			return Acquisitions.this.leases.register(this.name, this.key, this.owner, token, this.ttl, this.renew,
					sentNanos, this.observation);
		}

		/** An attempt failed: its lock, if it took one, is released in the background. */
		final LockBackendException failed(Throwable ex) {
			if (Acquisitions.this.queue == null) {
				Acquisitions.this.background.releaseUnknownOutcome(this.key, this.owner);
			}
			LockBackendException failure = Acquisitions.this.failures.of(ex, "acquire", this.key);
			this.failure = failure;
			return failure;
		}

		/**
		 * After a refusal: this template's release of the key that was in flight when the attempt
		 * was sent ({@code before}) or is now, to wait for before attempting again; {@code null}
		 * if none (or it was retried after the deadline already).
		 */
		final @Nullable CompletableFuture<Void> ownRelease(@Nullable CompletableFuture<Void> before) {
			if (this.retriedOwnRelease) {
				return null;
			}
			CompletableFuture<Void> own = (before != null) ? before : Acquisitions.this.leases.releaseInFlight(this.key);
			if (own != null) {
				this.retriedOwnRelease = this.deadline - System.nanoTime() <= 0;
			}
			return own;
		}

		/** After a refusal: how long to wait before the next attempt, in nanoseconds; 0 to give up. */
		final long pauseAfter(AcquireResult result) {
			long remaining = this.deadline - System.nanoTime();
			if (remaining <= 0) {
				return 0;
			}
			boolean announcing = Acquisitions.this.lines.announcing();
			if (announcing != this.notifying) {
				// The backend started or stopped announcing releases: pause as such a backend's waiters do.
				this.notifying = announcing;
				this.pause = initialPause(announcing);
			}
			long sleep = Math.min(remaining, jitter(this.pause));
			if (result.holderRemainingMillis() >= 0) {
				sleep = Math.min(sleep, TimeUnit.MILLISECONDS.toNanos(result.holderRemainingMillis() + 1));
			}
			if (announcing && Acquisitions.this.lines.notListeningYet()) {
				// The subscription opens in the background: a release now is announced to nobody.
				sleep = Math.min(sleep, jitter(NOT_LISTENING_PAUSE_NANOS));
			}
			this.pause = Math.min(this.pause * 2, Acquisitions.this.pollNanos);
			return Math.max(sleep, 1);
		}

		private long initialPause(boolean announcing) {
			return announcing ? Acquisitions.this.pollNanos : Math.min(MIN_PAUSE_NANOS, Acquisitions.this.pollNanos);
		}

		/** The acquisition is over: it leaves its line and, if it may be recorded and took no lock, withdraws. */
		final void end(boolean took) {
			if (!this.waits) {
				return;
			}
			boolean named = this.wasHead || Acquisitions.this.lines.isHead(this);
			Acquisitions.this.lines.leave(this, this.failure);
			if (this.records && named && !took) {
				Acquisitions.this.background.withdraw(this.key, this.owner);
			}
		}

		final Duration waited() {
			return Duration.ofNanos(System.nanoTime() - this.start);
		}

	}

	/** The blocking driver: attempts and waits on the caller's thread. */
	private final class Blocking extends Acquisition {

		private final Semaphore wakeups = new Semaphore(0);

		Blocking(String name, String key, Duration ttl, boolean renew, Duration wait, LockObservation observation) {
			super(name, key, ttl, renew, wait, observation);
		}

		@Override
		void wake() {
			this.wakeups.release();
		}

		@Nullable HeldLease run() throws InterruptedException {
			boolean took = false;
			try {
				if (this.waits && !join() && !awaitHead()) {
					return null;
				}
				while (true) {
					if (Thread.interrupted()) {
						throw new InterruptedException();
					}
					if (Acquisitions.this.draining && this.waits) {
						throw shuttingDown(this.key);
					}
					// Wake-ups from now on end the next wait: none is lost while the attempt is in flight.
					this.wakeups.drainPermits();
					CompletableFuture<Void> before = Acquisitions.this.leases.releaseInFlight(this.key);
					long sent = System.nanoTime();
					AcquireResult result;
					try {
						if (Acquisitions.this.queue != null) {
							WaitQueue.Outcome outcome = Acquisitions.this.queue.acquire(this.key, this.owner, this.ttl,
									Duration.ofNanos(Math.max(0, this.deadline - sent)));
							result = outcome.result();
							sent = outcome.confirmedNanos();
						}
						else {
							result = this.records
									? Acquisitions.this.handoff.tryAcquireWaiting(this.key, this.owner, this.ttl, recordFor())
									: Acquisitions.this.backend.tryAcquire(this.key, this.owner, this.ttl);
						}
					}
					catch (RuntimeException ex) {
						LockBackendException failure = failed(ex);
						if (Thread.interrupted()) {
							// Not the backend's failure: those behind in the line carry on.
							this.failure = null;
							InterruptedException interrupted = new InterruptedException(
									"Interrupted during the " + Acquisitions.this.failures.backendName() + " backend's acquire call");
							interrupted.initCause(failure);
							throw interrupted;
						}
						throw failure;
					}
					if (result.acquired()) {
						HeldLease lease = took(result.fencingToken(), sent);
						took = true;
						return lease;
					}
					if (Acquisitions.this.queue != null) {
						return null;
					}
					CompletableFuture<Void> own = ownRelease(before);
					if (own != null) {
						try {
							own.get();
						}
						catch (ExecutionException ex) {
							// Failures were reported by the release.
						}
						continue;
					}
					long sleep = pauseAfter(result);
					if (sleep == 0) {
						return null;
					}
					this.wakeups.tryAcquire(sleep, TimeUnit.NANOSECONDS);
				}
			}
			finally {
				end(took);
			}
		}

		/** Waits behind the line's head until it is the head, or the deadline passed (false). */
		private boolean awaitHead() throws InterruptedException {
			while (!becameHead()) {
				if (Acquisitions.this.draining) {
					throw shuttingDown(this.key);
				}
				LockBackendException ahead = this.failure;
				if (ahead != null) {
					throw ahead;
				}
				long left = this.deadline - System.nanoTime();
				if (left <= 0) {
					return false;
				}
				this.wakeups.tryAcquire(left, TimeUnit.NANOSECONDS);
			}
			return true;
		}

	}

	/**
	 * The non-blocking driver: each attempt is a backend callback, each wait a release event or a
	 * timer on the JDK's shared delayed executor; retries run on the common fork-join pool. No
	 * thread per lock or per waiter.
	 */
	private final class NonBlocking extends Acquisition {

		/** An attempt in flight or about to be sent. */
		private static final int RUNNING = 0;

		/** Waiting for a wake-up or the timer. */
		private static final int WAITING = 1;

		/** Running, and woken meanwhile: the next wait ends at once. */
		private static final int WOKEN = 2;

		final CompletableFuture<@Nullable Lease> result = new CompletableFuture<>();

		private final AtomicInteger state = new AtomicInteger(RUNNING);

		/** Numbers the waits, so that the timer of an earlier wait does nothing. */
		private volatile int waitNumber;

		NonBlocking(String name, String key, Duration ttl, boolean renew, Duration wait, LockObservation observation) {
			super(name, key, ttl, renew, wait, observation);
		}

		void start() {
			this.result.whenComplete((lease, ex) -> {
				end(lease != null);
				// A lease told its observation already, when it was registered.
				if (ex instanceof CancellationException) {
					this.observation.cancelled();
				}
				else if (ex != null) {
					this.observation.failed(ex);
				}
				else if (lease == null) {
					this.observation.notAcquired();
				}
			});
			if (Acquisitions.this.draining && this.waits) {
				fail(shuttingDown(this.key));
				return;
			}
			if (this.waits && !join()) {
				arm(this.deadline - System.nanoTime());
				return;
			}
			attempt();
		}

		@Override
		void wake() {
			while (true) {
				int current = this.state.get();
				if (current == WAITING) {
					if (this.state.compareAndSet(WAITING, RUNNING)) {
						Acquisitions.this.executor.execute(this::resume);
						return;
					}
				}
				else if (current == WOKEN || this.state.compareAndSet(RUNNING, WOKEN)) {
					return;
				}
			}
		}

		/** Waits {@code nanos} at most, or less if woken; a wake-up that came meanwhile ends it at once. */
		private void arm(long nanos) {
			int wait = this.waitNumber + 1;
			this.waitNumber = wait;
			if (!this.state.compareAndSet(RUNNING, WAITING)) {
				this.state.set(RUNNING);
				Acquisitions.this.executor.execute(this::resume);
				return;
			}
			CompletableFuture.delayedExecutor(Math.max(nanos, 1), TimeUnit.NANOSECONDS, Acquisitions.this.executor)
				.execute(() -> {
					if (this.waitNumber == wait && this.state.compareAndSet(WAITING, RUNNING)) {
						resume();
					}
				});
		}

		private void resume() {
			if (this.result.isDone()) {
				return;
			}
			if (Acquisitions.this.draining && this.waits) {
				fail(shuttingDown(this.key));
				return;
			}
			LockBackendException ahead = this.failure;
			if (ahead != null) {
				fail(ahead);
				return;
			}
			if (this.waits && !becameHead()) {
				long left = this.deadline - System.nanoTime();
				if (left <= 0) {
					notAcquired();
				}
				else {
					arm(left);
				}
				return;
			}
			attempt();
		}

		private void attempt() {
			CompletableFuture<Void> before = Acquisitions.this.leases.releaseInFlight(this.key);
			long sent = System.nanoTime();
			CompletionStage<AcquireResult> answer;
			try {
				answer = this.records
						? Acquisitions.this.handoff.tryAcquireWaitingAsync(this.key, this.owner, this.ttl, recordFor())
						: Acquisitions.this.async.tryAcquireAsync(this.key, this.owner, this.ttl);
			}
			catch (RuntimeException ex) {
				answer = CompletableFuture.failedFuture(ex);
			}
			answer.whenComplete((outcome, ex) -> answered(outcome, ex, sent, before));
		}

		private void answered(@Nullable AcquireResult outcome, @Nullable Throwable ex, long sent,
				@Nullable CompletableFuture<Void> before) {
			if (ex != null || outcome == null) {
				fail(failed((ex != null) ? ex : new IllegalStateException("no answer")));
				return;
			}
			if (outcome.acquired()) {
				if (this.result.isDone()) {
					// Ended (cancelled) while the attempt was in flight: give the lock back, never registered.
					Acquisitions.this.background.retryRelease(this.key, this.owner);
					return;
				}
				LeaseHandle lease;
				try {
					lease = new LeaseHandle(took(outcome.fencingToken(), sent));
				}
				catch (RuntimeException failure) {
					Acquisitions.this.background.retryRelease(this.key, this.owner);
					this.result.completeExceptionally(failure);
					return;
				}
				lease.detachFromThread();
				Acquisitions.this.listener.acquired(this.name, Acquisitions.this.failures.backendName(), waited());
				if (!this.result.complete(lease)) {
					// Cancelled while the lease was registered: give it back.
					lease.closeAsync();
				}
				return;
			}
			if (this.result.isDone()) {
				if (this.records) {
					// Refused after the acquisition ended (and withdrew): it recorded the waiter again.
					Acquisitions.this.background.withdraw(this.key, this.owner);
				}
				return;
			}
			CompletableFuture<Void> own = ownRelease(before);
			if (own != null) {
				own.whenComplete((done, never) -> Acquisitions.this.executor.execute(this::resume));
				return;
			}
			long sleep = pauseAfter(outcome);
			if (sleep == 0) {
				notAcquired();
				return;
			}
			arm(sleep);
		}

		private void notAcquired() {
			if (this.result.complete(null)) {
				Acquisitions.this.listener.notAcquired(this.name, Acquisitions.this.failures.backendName(), waited());
			}
		}

		private void fail(LockBackendException ex) {
			if (this.result.completeExceptionally(ex)) {
				Acquisitions.this.listener.failed(this.name, Acquisitions.this.failures.backendName(), waited(), ex);
			}
		}

	}

}
