package dev.holdfast.core;

import java.time.Duration;
import java.util.Queue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerFieldUpdater;

import org.jspecify.annotations.Nullable;

import dev.holdfast.Lease;
import dev.holdfast.LockListener.LockObservation;
import dev.holdfast.LockListener;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.ReleaseEvents;

/**
 * The non-blocking acquisition path of a {@link DefaultLockTemplate} over an
 * {@link AsyncLockBackend}. No thread waits: each attempt is a backend callback, and a waiter
 * retries when the backend reports a release (the oldest local waiter of the key is woken) or
 * when a jittered timer fires, never later than the holder's remaining time to live nor the
 * caller's wait time. Retries run on the common fork-join pool; timers are the JDK's shared
 * delayed executor, so there is no thread per lock or per waiter.
 * <p>
 * Unlike the blocking path there is no local queue in front of the backend: each waiting
 * acquisition races for itself. Local state is bounded: a key has an entry only while an
 * acquisition waits for it.
 */
final class AsyncLockSupport {

	private static final long MIN_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

	private final DefaultLockTemplate template;

	private final AsyncLockBackend backend;

	private final LockListener listener;

	private final OwnerTokens owners;

	private final long pollNanos;

	private final Executor executor = ForkJoinPool.commonPool();

	/** The template's recorded waiters, when the backend hands released locks to them. */
	private final @Nullable HandoffWaiters handoff;

	/** Acquisitions waiting for a release event, by key, oldest first. */
	private final ConcurrentHashMap<String, Queue<Waiter>> waiters = new ConcurrentHashMap<>();

	AsyncLockSupport(DefaultLockTemplate template, AsyncLockBackend backend, LockListener listener,
			OwnerTokens owners, Duration pollInterval, @Nullable HandoffWaiters handoff) {
		this.handoff = handoff;
		this.template = template;
		this.backend = backend;
		this.listener = listener;
		this.owners = owners;
		this.pollNanos = pollInterval.toNanos();
	}

	CompletableFuture<@Nullable Lease> tryAcquire(String name, String key, Duration wait, Duration ttl,
			boolean renew) {
		LockObservation observation = this.listener.acquiring(name, key, this.backend.name());
		Acquisition acquisition = new Acquisition(name, key, ttl, renew, System.nanoTime() + wait.toNanos(),
				observation);
		HandoffWaiters handoff = this.handoff;
		if (handoff != null && wait.toNanos() > 0) {
			// A waiting acquisition records itself with each refused attempt, under one owner token;
			// a grant from the backend's release wakes it. Registered before the first attempt.
			acquisition.recorded = handoff.register(key, ttl, acquisition::granted);
		}
		acquisition.result.whenComplete((lease, ex) -> {
			Waiter waiter = acquisition.waiter;
			if (waiter != null) {
				unqueue(waiter);
			}
			HandoffWaiters.Waiter recorded = acquisition.recorded;
			if (recorded != null) {
				// Ended without taking the lock (timeout, cancel, failure): withdraw the record and
				// hand on a lock a release gave it; does nothing once the lock was returned.
				recorded.gaveUp();
			}
			// A granted lease told its observation already, before anyone could release it.
			if (ex instanceof CancellationException) {
				observation.cancelled();
			}
			else if (ex != null) {
				observation.failed(ex);
			}
			else if (lease == null) {
				observation.notAcquired();
			}
		});
		acquisition.attempt();
		return acquisition.result;
	}

	/** A release event: wakes the oldest acquisition that waits for the key. */
	void onRelease(String key) {
		Queue<Waiter> queue = this.waiters.get(key);
		if (queue == null) {
			return;
		}
		Waiter waiter;
		while ((waiter = queue.poll()) != null) {
			if (waiter.signal()) {
				return;
			}
		}
	}

	private boolean announcesReleases() {
		return this.backend instanceof ReleaseEvents events && events.announcesReleases();
	}

	/** Release events stopped: wakes every waiting acquisition, which attempts again now. */
	void onInterrupted() {
		for (Queue<Waiter> queue : this.waiters.values()) {
			Waiter waiter;
			while ((waiter = queue.poll()) != null) {
				waiter.signal();
			}
		}
	}

	private void enqueue(Waiter waiter) {
		this.waiters.compute(waiter.acquisition.key, (k, queue) -> {
			Queue<Waiter> result = (queue != null) ? queue : new ConcurrentLinkedQueue<>();
			result.add(waiter);
			return result;
		});
	}

	private void unqueue(Waiter waiter) {
		this.waiters.computeIfPresent(waiter.acquisition.key, (k, queue) -> {
			queue.remove(waiter);
			return queue.isEmpty() ? null : queue;
		});
	}

	private static long jitter(long nanos) {
		return nanos / 2 + ThreadLocalRandom.current().nextLong(nanos / 2 + 1);
	}

	private static final AtomicIntegerFieldUpdater<Acquisition> SENDING = AtomicIntegerFieldUpdater
		.newUpdater(Acquisition.class, "sending");

	/** One call of tryAcquire: its attempts, its waits and its outcome. */
	private final class Acquisition {

		final CompletableFuture<@Nullable Lease> result = new CompletableFuture<>();

		final String name;

		final String key;

		final Duration ttl;

		final boolean renew;

		final LockObservation observation;

		final long start = System.nanoTime();

		final long deadline;

		/**
		 * Whether the backend announces releases, read again before every pause (confined, like
		 * pause): a lost subscription makes the waiter poll with short pauses.
		 */
		boolean notifying = announcesReleases();

		/** Confined to the current attempt: attempts never overlap. */
		long pause;

		/** Whether a retry after this process's own release came after the deadline (confined, like pause). */
		boolean retriedOwnRelease;

		volatile @Nullable Waiter waiter;

		/** Set before the first attempt when this acquisition waits on a handoff backend. */
		volatile HandoffWaiters.@Nullable Waiter recorded;

		/**
		 * Attempts of the recorded waiter being sent: each counts from before it looks at the
		 * waiter's state until it is written to the connection (a count, as the answer of one may
		 * start the next on another thread before the first has left). A grant heard meanwhile is
		 * left to the last sender, which takes it once its attempt is written (see {@link #attempt}).
		 */
		volatile int sending;

		/** The lease this acquisition returned (or gave back, cancelled meanwhile), once it did. */
		volatile @Nullable LeaseHandle returned;

		Acquisition(String name, String key, Duration ttl, boolean renew, long deadline, LockObservation observation) {
			this.name = name;
			this.key = key;
			this.ttl = ttl;
			this.renew = renew;
			this.deadline = deadline;
			this.observation = observation;
			this.pause = this.notifying ? AsyncLockSupport.this.pollNanos
					: Math.min(MIN_PAUSE_NANOS, AsyncLockSupport.this.pollNanos);
		}

		void attempt() {
			if (this.result.isDone()) {
				return;
			}
			Waiter next = null;
			if (this.notifying && AsyncLockSupport.this.template.subscribed()) {
				// Listen before the attempt, so that a release between the two is not missed.
				next = new Waiter(this);
				this.waiter = next;
				enqueue(next);
			}
			Waiter current = next;
			HandoffWaiters.Waiter recorded = this.recorded;
			if (recorded != null) {
				// An attempt written after a grant returned the lock would land behind the caller's
				// release of it (on the same connection): it would take the lock again, or record
				// the waiter again for a later release to hand the lock to, for an acquisition that
				// has ended, and the lock would stay blocked for its lease time. So a grant heard
				// from here until the attempt is written is taken after the write (granted() leaves
				// it while the count is above zero: the count raised before the state is read here,
				// the state set before the count is read there, both volatile, so one of the two
				// sees the other).
				SENDING.incrementAndGet(this);
				if (recorded.takeGranted()) {
					SENDING.decrementAndGet(this);
					completeGranted(recorded, current);
					return;
				}
				if (recorded.ended()) {
					// Taken by a grant just now, or given up: nothing to send.
					SENDING.decrementAndGet(this);
					if (current != null) {
						unqueue(current);
					}
					return;
				}
			}
			try {
				send(recorded, current);
			}
			finally {
				if (recorded != null && SENDING.decrementAndGet(this) == 0 && recorded.takeGranted()) {
					// A grant heard while the attempt was being written: the attempt is ahead of any
					// release of this lease; its answer finds the lock taken (Took.BY_GRANT).
					completeGranted(recorded, this.waiter);
				}
			}
		}

		/** Completes this acquisition with the lock a grant handed to {@code recorded}, taken. */
		private void completeGranted(HandoffWaiters.Waiter recorded, @Nullable Waiter current) {
			complete(recorded.owner, recorded.fencingToken(), recorded.leaseFrom(), current);
		}

		/** Writes one attempt ({@link #attempt}) and handles its answer. */
		private void send(HandoffWaiters.@Nullable Waiter recorded, @Nullable Waiter current) {
			String owner = (recorded != null) ? recorded.owner : AsyncLockSupport.this.owners.next();
			// Looked at before the attempt is sent: the backend may run the attempt before that
			// release and answer the release first, so it is gone from the map by the answer.
			HeldLease releaseBefore = (this.retriedOwnRelease || recorded != null) ? null
					: AsyncLockSupport.this.template.releaseBeforeAttempt(this.key);
			long attemptStart = System.nanoTime();
			CompletionStage<AcquireResult> answer;
			try {
				answer = (recorded != null) ? recorded.attemptAsync(this.deadline)
						: AsyncLockSupport.this.backend.tryAcquireAsync(this.key, owner, this.ttl);
			}
			catch (RuntimeException ex) {
				answer = CompletableFuture.failedFuture(ex);
			}
			answer.whenComplete((outcome, ex) -> {
				if (ex != null) {
					failed(ex, current, owner);
				}
				else if (outcome.acquired()) {
					acquired(owner, outcome.fencingToken(), attemptStart, current);
				}
				else {
					HandoffWaiters.Waiter recordedNow = this.recorded;
					if (recordedNow != null) {
						// The answer's arrival: a refusal answered a lease time after the lease start
						// moves nothing (HandoffWaiters.Waiter.refused).
						recordedNow.refused(attemptStart, System.nanoTime());
					}
					if (recordedNow != null && this.result.isDone()) {
						// Cancelled while this attempt was being sent: it recorded the waiter after
						// its withdrawal.
						recordedNow.recordedAfterGivingUp();
						// Or a grant returned the lock and the caller released it before this answer:
						// if the attempt ran after that release, it recorded the waiter again.
						afterReturnedLeaseReleased(recordedNow::recordedAfterItsLeaseEnded);
					}
					retry(outcome, current, releaseBefore);
				}
			});
		}

		/**
		 * A grant from the backend names this acquisition: takes the lock it was handed, or wakes
		 * its wait (a reservation, or a lease start too old to trust), or the next one. Runs on the
		 * client's I/O thread; an attempt may be in flight, whose answer then finds the waiter
		 * taken and is dropped. The caller's lease is completed on the executor, not here: an
		 * attempt that returned from its send is queued on its connection's event loop, possibly
		 * not yet written, and a release issued on that loop's own thread (the caller's
		 * continuation, run where the result completes) would be written ahead of it; one issued
		 * from another thread is queued behind it (review of the sending count). It also keeps
		 * the caller's code off the client's I/O threads.
		 */
		void granted() {
			HandoffWaiters.Waiter recorded = this.recorded;
			// While an attempt is being written, its sender takes the grant once it is written.
			if (recorded != null && this.sending == 0 && recorded.takeGranted()) {
				Waiter current = this.waiter;
				AsyncLockSupport.this.executor.execute(
						() -> completeGranted(recorded, current));
				return;
			}
			Waiter current = this.waiter;
			if (current != null) {
				current.signal();
			}
		}

		private void acquired(String owner, long token, long attemptStart, @Nullable Waiter current) {
			HandoffWaiters.Waiter recorded = this.recorded;
			HandoffWaiters.Took took = (recorded != null) ? recorded.took() : HandoffWaiters.Took.NOW;
			if (took != HandoffWaiters.Took.NOW) {
				if (current != null) {
					unqueue(current);
				}
				if (took == HandoffWaiters.Took.AFTER_GIVING_UP) {
					// Cancelled, and withdrawn: the withdrawal hands this lock on (it ran after this
					// attempt) or finds nothing (the attempt ran after it). Never registered, so it
					// cannot displace the lease of whoever holds the key next; released in case
					// the attempt came last (owner-checked: nothing if handed on).
					AsyncLockSupport.this.backend.releaseAsync(this.key, owner);
				}
				else {
					// BY_GRANT: its grant made it the holder and returned the lock already: the same
					// lock, unless that lease was released before this answer came.
					afterReturnedLeaseReleased(() -> AsyncLockSupport.this.backend.releaseAsync(this.key, owner));
				}
				return;
			}
			complete(owner, token, attemptStart, current);
		}

		/**
		 * Runs {@code backstop} once the release of the lease a grant returned has been answered, if
		 * that release had started when an attempt's answer came in. Such an attempt may have been
		 * written after the release (Redis: an attempt resent after {@code NOSCRIPT} or a
		 * reconnection, or sent while the connection was fetched again, which the sending count
		 * does not order) and so taken the lock again, or recorded the waiter again, for an
		 * acquisition that has ended: nobody would release it, and the lock would stay blocked for
		 * its lease time. Owner tokens are never reused and the backstop is owner-checked, so it
		 * does nothing when the attempt ran first. A lease not yet released when the answer came is
		 * released after it, and its release deletes whatever the attempt did.
		 */
		private void afterReturnedLeaseReleased(Runnable backstop) {
			LeaseHandle returned = this.returned;
			CompletableFuture<Void> releasing = (returned != null) ? returned.lease().releasing() : null;
			if (releasing != null) {
				releasing.whenComplete((done, ex) -> backstop.run());
			}
		}

		private void complete(String owner, long token, long attemptStart, @Nullable Waiter current) {
			if (current != null) {
				unqueue(current);
			}
			LeaseHandle lease;
			try {
				lease = AsyncLockSupport.this.template.registerDetached(this.name, this.key, owner, token, this.ttl,
						this.renew, attemptStart, this.observation);
			}
			catch (RuntimeException ex) {
				AsyncLockSupport.this.backend.releaseAsync(this.key, owner);
				this.result.completeExceptionally(ex);
				return;
			}
			AsyncLockSupport.this.listener.acquired(this.name, AsyncLockSupport.this.backend.name(), waited());
			this.returned = lease;
			if (!this.result.complete(lease)) {
				// Cancelled while the backend granted the lock: give it back.
				lease.closeAsync();
			}
		}

		private void retry(AcquireResult outcome, @Nullable Waiter current, @Nullable HeldLease releaseBefore) {
			// A recorded waiter need not wait for this process's own release: that release hands the
			// lock to a recorded waiter, and a grant wakes it.
			CompletableFuture<Void> ownRelease = (this.retriedOwnRelease || this.recorded != null) ? null
					: AsyncLockSupport.this.template.ownRelease(this.key, releaseBefore);
			if (ownRelease != null && !this.result.isDone()) {
				// Found held while this process's own release of the key was in flight (when the
				// attempt was sent, or now): not a contender, try again once the backend answered that release (or the released
				// lease expired). Once more after the deadline, then no more.
				this.retriedOwnRelease = this.deadline - System.nanoTime() <= 0;
				if (current != null) {
					unqueue(current);
				}
				ownRelease.whenComplete((done, never) -> AsyncLockSupport.this.executor.execute(this::attempt));
				return;
			}
			long remaining = this.deadline - System.nanoTime();
			if (remaining <= 0 || this.result.isDone()) {
				if (current != null) {
					unqueue(current);
				}
				if (this.result.complete(null)) {
					AsyncLockSupport.this.listener.notAcquired(this.name, AsyncLockSupport.this.backend.name(),
							waited());
				}
				return;
			}
			boolean announcing = announcesReleases();
			if (announcing != this.notifying) {
				// The backend started or stopped announcing releases: pause as such a backend's waiters do.
				this.notifying = announcing;
				this.pause = announcing ? AsyncLockSupport.this.pollNanos
						: Math.min(MIN_PAUSE_NANOS, AsyncLockSupport.this.pollNanos);
			}
			long sleep = Math.min(remaining, jitter(this.pause));
			if (outcome.holderRemainingMillis() >= 0) {
				sleep = Math.min(sleep, TimeUnit.MILLISECONDS.toNanos(outcome.holderRemainingMillis() + 1));
			}
			this.pause = Math.min(this.pause * 2, AsyncLockSupport.this.pollNanos);
			Waiter waiter = (current != null) ? current : new Waiter(this);
			waiter.arm(sleep);
		}

		private void failed(Throwable failure, @Nullable Waiter current, String owner) {
			if (current != null) {
				unqueue(current);
			}
			HandoffWaiters.Waiter recorded = this.recorded;
			if (recorded != null && !recorded.gaveUp()) {
				// A grant returned the lock to the caller while this attempt was in flight (a
				// timeout, a reset, a replica shortfall): the lock is the caller's lease now, and the
				// attempt's answer would have been that same lock. Never released by owner here.
				return;
			}
			// A timeout does not tell whether the backend took the lock (for a recorded waiter,
			// now gone: a grant can no longer return it, and its withdrawal hands a handed lock on).
			AsyncLockSupport.this.template.releaseUnknownOutcome(this.key, owner);
			Throwable cause = (failure instanceof CompletionException && failure.getCause() != null)
					? failure.getCause() : failure;
			RuntimeException ex = AsyncLockSupport.this.template.backendFailure(cause, "acquire", this.key);
			if (this.result.completeExceptionally(ex)) {
				AsyncLockSupport.this.listener.failed(this.name, AsyncLockSupport.this.backend.name(), waited(), ex);
			}
		}

		private Duration waited() {
			return Duration.ofNanos(System.nanoTime() - this.start);
		}

	}

	/**
	 * One wait of an acquisition between two attempts: ends with a release event or a timer,
	 * whichever comes first, and only once it is armed (after the attempt failed).
	 */
	private final class Waiter {

		final Acquisition acquisition;

		private volatile boolean armed;

		private volatile boolean signalled;

		private final AtomicBoolean woken = new AtomicBoolean();

		Waiter(Acquisition acquisition) {
			this.acquisition = acquisition;
		}

		/** A release event for the key; false if this waiter no longer waits. */
		boolean signal() {
			if (this.woken.get() || this.acquisition.result.isDone()) {
				return false;
			}
			this.signalled = true;
			if (this.armed) {
				wake();
			}
			return true;
		}

		void arm(long sleepNanos) {
			this.armed = true;
			CompletableFuture.delayedExecutor(sleepNanos, TimeUnit.NANOSECONDS, AsyncLockSupport.this.executor)
				.execute(this::wake);
			if (this.signalled) {
				wake();
			}
		}

		private void wake() {
			if (this.woken.compareAndSet(false, true)) {
				unqueue(this);
				AsyncLockSupport.this.executor.execute(this.acquisition::attempt);
			}
		}

	}

}
