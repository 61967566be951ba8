package dev.holdfast.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.AbstractQueuedSynchronizer;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockListener.LockObservation;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.WaitQueue;

/**
 * The blocking acquisition path of a {@link DefaultLockTemplate}: threads of this process that
 * want one key queue on a local fair gate, and only the one at its head races on the backend.
 * Between attempts the racer waits for a release event (when the backend sends them, through the
 * template's one subscription) or for a jittered pause that grows to the poll interval, never
 * longer than the holder's remaining time to live nor the caller's remaining wait time. A backend
 * with a {@link WaitQueue} of its own gets the whole wait in one call instead.
 */
final class Racer implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(DefaultLockTemplate.class);

	private static final long MIN_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

	/** The longest pause between attempts while release events are not delivered yet. */
	private static final long NOT_LISTENING_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

	/**
	 * For how long after the subscription was opened the short pause applies: a subscription
	 * that never listens (no pub/sub allowed) must not make every waiter poll at 20 Hz for ever.
	 */
	private static final long NOT_LISTENING_WINDOW_NANOS = TimeUnit.SECONDS.toNanos(10);

	/**
	 * The longest a racer waits, after its process's release of the key was answered, for the
	 * announcement of that release (which normally comes within a millisecond of the answer).
	 */
	static final long ANNOUNCEMENT_WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

	private final DefaultLockTemplate template;

	private final LockBackend backend;

	private final OwnerTokens owners;

	private final long pollNanos;

	/** The template's non-blocking waiters, woken by the same release events. */
	private final @Nullable AsyncLockSupport async;

	/** The template's recorded waiters, when the backend hands released locks to them. */
	private final @Nullable HandoffWaiters handoff;

	/**
	 * Whether the backend's release hands an unmarked lock to this process's named next waiter
	 * ({@link dev.holdfast.spi.WaiterHandoff#handsUnmarkedLockToLocalWaiter()}): only then does
	 * the racer send nothing while this template validly holds the key.
	 */
	private final boolean releaseNamesRacer;

	/** Local queues of threads that want a key, by key. */
	private final ConcurrentHashMap<String, Gate> gates = new ConcurrentHashMap<>();

	/** The racer waiting for a release event, by key. */
	private final ConcurrentHashMap<String, Signal> waiters = new ConcurrentHashMap<>();

	private final ReentrantLock subscribeLock = new ReentrantLock();

	private volatile @Nullable AutoCloseable subscription;

	private volatile long subscribeRetryAtNanos;

	private volatile long subscribedAtNanos;

	Racer(DefaultLockTemplate template, LockBackend backend, OwnerTokens owners, Duration pollInterval,
			@Nullable AsyncLockSupport async, @Nullable HandoffWaiters handoff) {
		this.template = template;
		this.backend = backend;
		this.owners = owners;
		this.pollNanos = pollInterval.toNanos();
		this.async = async;
		this.handoff = handoff;
		this.releaseNamesRacer = handoff != null && handoff.backend().handsUnmarkedLockToLocalWaiter();
	}

	/**
	 * Attempts until the lock is acquired or the deadline passes, as the gate's head.
	 * @return the registered lease, or {@code null} if the lock stayed held until the deadline
	 */
	@Nullable HeldLease race(String name, String key, Duration ttl, boolean renew, long deadline,
			LockObservation observation) throws InterruptedException {
		if (this.backend instanceof WaitQueue queue) {
			return queue(queue, name, key, ttl, renew, deadline, observation);
		}
		ReleaseEvents events = (this.backend instanceof ReleaseEvents announcing) ? announcing : null;
		boolean notifying = events != null && events.announcesReleases();
		long pollNanos = this.pollNanos;
		long pause = notifying ? pollNanos : Math.min(MIN_PAUSE_NANOS, pollNanos);
		Signal signal = null;
		boolean listening = false;
		boolean retriedOwnRelease = false;
		HandoffWaiters handoff = this.handoff;
		HandoffWaiters.Waiter recorded = null;
		if (handoff != null && deadline - System.nanoTime() > 0) {
			// A waiting caller (not a try-once one) records itself with each refused attempt, under
			// one owner token, and the backend's release hands the lock to one recorded waiter and
			// announces the grant, which wakes it through its signal. Registered before the first
			// attempt, so that a grant never arrives for an owner this template does not know.
			signal = listen(key);
			recorded = handoff.adopt(key, ttl, signal::release);
			// Listening from the start: no retry after the first refused attempt is needed.
			listening = subscribed();
		}
		boolean took = false;
		try {
			while (true) {
				if (Thread.interrupted()) {
					throw new InterruptedException();
				}
				if (recorded != null && recorded.takeGranted()) {
					// A release made this waiter the holder, and its grant carried the fencing token:
					// no claim to send. The lease starts before the release set the lock's expiry.
					took = true;
					return this.template.register(name, key, recorded.owner, recorded.fencingToken(), ttl, renew,
							recorded.leaseFrom(), observation);
				}
				if (events != null && events.announcesReleases() != notifying) {
					// The backend started or stopped announcing releases (its listening connection
					// opened, or was lost): wait as a backend with, or without, release events does.
					notifying = !notifying;
					pause = notifying ? pollNanos : Math.min(MIN_PAUSE_NANOS, pollNanos);
					listening = false;
				}
				// With the handoff decided by the backend, a racer need not stay silent while its own
				// JVM holds the key: it records itself and is drawn as fairly as any other waiter.
				long localHold = (notifying && handoff == null) ? this.template.localHoldNanos(key) : 0;
				long announcementWait = 0;
				if (signal != null) {
					if (signal.heard) {
						// The announcement of this process's release came: attempt now, with the
						// other processes' racers, even if the release's answer is still on its way.
						signal.heard = false;
						localHold = 0;
					}
					else if (signal.awaitingAnnouncement) {
						announcementWait = signal.announcementWaitNanos();
					}
				}
				if ((localHold > 0 || announcementWait > 0) && deadline - System.nanoTime() > 0) {
					// Another thread of this process holds the key or is releasing it: an attempt now
					// would fail, or land just behind that release and win before any other instance
					// heard of it. Wait for the local release instead, so that this racer starts from
					// the same release as the other instances' racers (they hear its announcement).
					// Not on a polling backend: there the other instances' racers hear nothing, and a
					// racer woken here would win every time.
					if (signal == null) {
						// Listen before looking again, so that a release between the two is not missed.
						signal = listen(key);
						continue;
					}
					long sleep = Math.min(Math.min(deadline - System.nanoTime(), Math.max(localHold, announcementWait)),
							pollNanos);
					if (signal.tryAcquire(sleep, TimeUnit.NANOSECONDS)) {
						signal.drainPermits();
					}
					continue;
				}
				if (this.releaseNamesRacer && recorded != null && signal != null && this.subscription != null
						&& recorded.waiting()) {
					// This template holds the key: its release names this waiter to the backend
					// (HandoffWaiters.localWaiter), which records it and draws, and the answer's grant
					// wakes it; an attempt now would only be refused. A release that did not hand the
					// lock on (failed, answer lost, answered "not held") or a lease lost wakes it too
					// (onLocalRelease, onLocalLoss). The waiter is in the racers map before the lease's
					// validity is read here (a volatile write), and a release marks its lease released
					// (a volatile read-modify-write), then fences, before it reads that map
					// (LeaseReleases.nextWaiter), so a lease seen valid here is released naming this
					// waiter. Not while that release is in flight: it may have been sent before this
					// waiter was known.
					long held = this.template.validHoldNanos(key);
					long wait = Math.min(Math.min(held, pollNanos), deadline - System.nanoTime());
					if (held > 0 && wait > 0) {
						if (signal.tryAcquire(wait, TimeUnit.NANOSECONDS)) {
							signal.drainPermits();
						}
						continue;
					}
				}
				String owner = (recorded != null) ? recorded.owner : this.owners.next();
				// Looked at before the attempt is sent: the backend may run the attempt before that
				// release and answer the release first, so it is gone from the map by the answer.
				// A recorded waiter need not: the release hands the lock to a recorded waiter and a
				// grant wakes it.
				HeldLease releaseBefore = (retriedOwnRelease || recorded != null) ? null
						: this.template.releaseBeforeAttempt(key);
				long attemptStart = System.nanoTime();
				AcquireResult result;
				try {
					result = (recorded != null) ? recorded.attempt(deadline)
							: this.backend.tryAcquire(key, owner, ttl);
				}
				catch (RuntimeException failure) {
					RuntimeException ex = this.template.backendFailure(failure, "acquire", key);
					// A timeout or an interrupt does not tell whether the backend took the lock.
					this.template.releaseUnknownOutcome(key, owner);
					if (Thread.interrupted()) {
						InterruptedException interrupted = new InterruptedException(
								"Interrupted during the " + this.backend.name() + " backend's acquire call");
						interrupted.initCause(ex);
						throw interrupted;
					}
					throw ex;
				}
				if (result.acquired()) {
					took = true;
					if (recorded != null) {
						// The racer's own thread: never after giving up, never beside takeGranted.
						recorded.took();
					}
					return this.template.register(name, key, owner, result.fencingToken(), ttl, renew, attemptStart,
							observation);
				}
				if (recorded != null) {
					recorded.refused(attemptStart, System.nanoTime());
				}
				if (recorded == null && !retriedOwnRelease && this.template.awaitOwnRelease(key, releaseBefore)) {
					// Found held while this process's own release of the key was in flight (when the
					// attempt was sent, or now): answered now (or that lease has expired). Once more
					// after the deadline, then no more.
					retriedOwnRelease = deadline - System.nanoTime() <= 0;
					continue;
				}
				long remaining = deadline - System.nanoTime();
				if (remaining <= 0) {
					if (recorded != null && recorded.takeGranted()) {
						// Granted as the wait ran out: the grant came first, the lock is returned.
						took = true;
						return this.template.register(name, key, recorded.owner, recorded.fencingToken(), ttl, renew,
								recorded.leaseFrom(), observation);
					}
					return null;
				}
				if (notifying && !listening && subscribed()) {
					// Listen before the next attempt, so that a release between the two is not missed.
					listening = true;
					if (signal == null) {
						signal = listen(key);
					}
					continue;
				}
				long sleep = Math.min(remaining, jitter(pause));
				if (result.holderRemainingMillis() >= 0) {
					sleep = Math.min(sleep, TimeUnit.MILLISECONDS.toNanos(result.holderRemainingMillis() + 1));
				}
				if (notifying && System.nanoTime() - this.subscribedAtNanos < NOT_LISTENING_WINDOW_NANOS
						&& events != null && !events.isListening()) {
					// The subscription opens in the background: a release now is announced to
					// nobody, so look again soon rather than after the slow poll.
					sleep = Math.min(sleep, jitter(NOT_LISTENING_PAUSE_NANOS));
				}
				if (signal != null) {
					if (signal.tryAcquire(sleep, TimeUnit.NANOSECONDS)) {
						signal.drainPermits();
					}
				}
				else {
					TimeUnit.NANOSECONDS.sleep(sleep);
				}
				pause = Math.min(pause * 2, pollNanos);
			}
		}
		finally {
			if (recorded != null && !took) {
				// Timeout, interrupt or failure: withdraw the record, and hand on a lock reserved for
				// this waiter by a grant that came too late. Never touches a lock it took.
				recorded.gaveUp();
			}
			if (signal != null) {
				this.waiters.remove(key, signal);
			}
		}
	}

	/** The whole wait in the backend's own queue: one call, no retries. */
	private @Nullable HeldLease queue(WaitQueue queue, String name, String key, Duration ttl, boolean renew,
			long deadline, LockObservation observation) throws InterruptedException {
		if (Thread.interrupted()) {
			throw new InterruptedException();
		}
		String owner = this.owners.next();
		Duration wait = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
		WaitQueue.Outcome outcome;
		try {
			outcome = queue.acquire(key, owner, ttl, wait);
		}
		catch (RuntimeException ex) {
			throw this.template.backendFailure(ex, "acquire", key);
		}
		AcquireResult result = outcome.result();
		if (!result.acquired()) {
			return null;
		}
		return this.template.register(name, key, owner, result.fencingToken(), ttl, renew, outcome.confirmedNanos(),
				observation);
	}

	/** Whether release events reach this template now; subscribes on first use. */
	boolean subscribed() {
		if (this.subscription != null) {
			return true;
		}
		if (System.nanoTime() - this.subscribeRetryAtNanos < 0) {
			return false;
		}
		this.subscribeLock.lock();
		try {
			if (this.subscription == null && !this.template.isClosed()) {
				this.subscription = (this.handoff != null)
						? this.handoff.backend().subscribe(this::onRelease, this.handoff::onGrant)
						: ((ReleaseEvents) this.backend).subscribe(this::onRelease, this::onInterrupted);
				this.subscribedAtNanos = System.nanoTime();
			}
			return this.subscription != null;
		}
		catch (RuntimeException ex) {
			this.subscribeRetryAtNanos = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
			logger.warn("Holdfast could not subscribe to release events of the " + this.backend.name()
					+ " backend; waiters poll until it can", ex);
			return false;
		}
		finally {
			this.subscribeLock.unlock();
		}
	}

	private Signal listen(String key) {
		Signal signal = new Signal();
		this.waiters.put(key, signal);
		return signal;
	}

	/**
	 * Whether a racer waits for {@code key}, which this template is about to release with an
	 * announcement to every process: that racer then waits for the announcement (for at most
	 * {@link #ANNOUNCEMENT_WAIT_NANOS} after the release's answer), not for the answer.
	 */
	boolean awaitAnnouncement(String key) {
		Signal signal = this.waiters.get(key);
		if (signal == null) {
			return false;
		}
		signal.heard = false;
		signal.answeredAtNanos = 0;
		signal.awaitingAnnouncement = true;
		return true;
	}

	/**
	 * A lease of this template on {@code key} was released (after the backend's release call
	 * returned) or forgotten: wakes the racer that waits for it, unless the backend announced the
	 * release to this process too, whose announcement wakes it then, or ({@code handedOn}) the
	 * backend handed the lock to a recorded waiter, whose grant wakes it. Other instances learn
	 * of it from the backend, if at all.
	 */
	void onLocalRelease(String key, boolean announced, boolean handedOn) {
		if (this.handoff != null) {
			if (!handedOn) {
				// The release failed, its answer was lost, or the key was not held any more: no
				// grant may come. The racer, which sent nothing while the lease was valid, attempts
				// now; idempotent if the lock was handed to it all the same.
				wake(key);
			}
			// Else handed to a recorded waiter: its grant wakes it; this process's racer, named
			// and so recorded by the release, is drawn by the next one.
			return;
		}
		Signal signal = this.waiters.get(key);
		if (signal != null) {
			if (announced && signal.awaitingAnnouncement) {
				signal.answeredAtNanos = System.nanoTime();
				// Woken anyway: the racer finds the announcement still awaited and waits for it at
				// most ANNOUNCEMENT_WAIT_NANOS from now. Not woken, it would sleep up to the poll
				// interval if the announcement were lost.
				signal.release();
				return;
			}
			signal.awaitingAnnouncement = false;
			signal.release();
		}
	}

	/**
	 * A lease of this template on {@code key} was marked lost (a renewal found it gone, or could not
	 * be made in time): wakes the racer that waits while that lease was valid; it attempts now.
	 */
	void onLocalLoss(String key) {
		wake(key);
	}

	/** Wakes the racer that waits for {@code key}, if any: it attempts at once. */
	private void wake(String key) {
		Signal signal = this.waiters.get(key);
		if (signal != null) {
			signal.release();
		}
	}

	private void onRelease(String key) {
		Signal signal = this.waiters.get(key);
		if (signal != null && signal.awaitingAnnouncement) {
			// The announcement of this process's own release, sent to every process on request:
			// the local racer starts from it, as the other processes' racers do.
			signal.awaitingAnnouncement = false;
			signal.heard = true;
			signal.release();
		}
		// Otherwise the announcement of this process's own release does not wake its racer: the
		// release's answer does (onLocalRelease). Woken by whichever came first of two, the local
		// racer would start ahead of the other instances' racers, which hear only the announcement.
		else if (signal != null && this.template.localHoldNanos(key) == 0) {
			signal.release();
		}
		if (this.async != null) {
			this.async.onRelease(key);
		}
	}

	/**
	 * Deliveries of release events stopped (the backend's listening connection was lost): every
	 * waiting racer looks again now, reads whether the backend still announces releases and, if
	 * not, polls, instead of sleeping for an announcement that cannot come.
	 */
	private void onInterrupted() {
		for (Signal signal : this.waiters.values()) {
			signal.release();
		}
		if (this.async != null) {
			this.async.onInterrupted();
		}
	}

	/** Joins the local queue of threads that want {@code key}. */
	Gate enterGate(String key) {
		Gate gate = this.gates.get(key);
		while (true) {
			if (gate == null) {
				Gate created = new Gate();
				gate = this.gates.putIfAbsent(key, created);
				if (gate == null) {
					return created;
				}
			}
			if (gate.join()) {
				return gate;
			}
			// Its last user has left it and is removing it: a new gate takes its place.
			Gate created = new Gate();
			if (this.gates.replace(key, gate, created)) {
				return created;
			}
			gate = this.gates.get(key);
		}
	}

	/** Leaves {@code gate} of {@code key}; the last user removes it, so the map holds only keys in use. */
	void leaveGate(String key, Gate gate) {
		if (gate.leave()) {
			this.gates.remove(key, gate);
			if (this.handoff != null) {
				// Nobody queues for the key here any more: a successor nobody adopted is withdrawn.
				this.handoff.queueEmptied(key);
			}
		}
	}

	/**
	 * A racer of {@code key} took the lock: if other threads of this process queue for it, its
	 * successor is registered now, so that the release records it even if it has not run yet.
	 */
	void tookWithQueue(String key, Duration ttl, Gate gate) {
		if (this.handoff != null && gate.hasQueuedThreads()) {
			this.handoff.successor(key, ttl);
		}
	}

	/** Whether a thread of this process queues or races for {@code key} now (its gate has users). */
	boolean wanted(String key) {
		return this.gates.containsKey(key);
	}

	/** How many keys have a gate now (threads that race or wait for them). */
	int gateCount() {
		return this.gates.size();
	}

	/** Whether a release subscription is open (it may not listen yet). */
	boolean hasSubscription() {
		return this.subscription != null;
	}

	/**
	 * Closes the release subscription; none opens once the template is closed, and a later
	 * contended acquisition of an open template opens it again.
	 */
	@Override
	public void close() {
		AutoCloseable current;
		this.subscribeLock.lock();
		try {
			current = this.subscription;
			this.subscription = null;
		}
		finally {
			this.subscribeLock.unlock();
		}
		if (current != null) {
			try {
				current.close();
			}
			catch (Exception ex) {
				logger.debug("Could not close the release subscription", ex);
			}
		}
	}

	/**
	 * The waiting racer's wake-up, and whether it waits for the announcement of this process's own
	 * release of the key (set by the releasing thread, cleared by the announcement or the answer).
	 */
	static final class Signal extends Semaphore {

		private static final long serialVersionUID = 1L;

		volatile boolean awaitingAnnouncement;

		/** The announcement came: the racer attempts without waiting for the release's answer. */
		volatile boolean heard;

		/** When the release that is to be announced was answered; 0 before. */
		volatile long answeredAtNanos;

		Signal() {
			super(0);
		}

		/**
		 * How much longer to wait for the announcement: until the release is answered, then at
		 * most {@link #ANNOUNCEMENT_WAIT_NANOS} (an announcement may be lost).
		 */
		long announcementWaitNanos() {
			long answered = this.answeredAtNanos;
			if (answered == 0) {
				return ANNOUNCEMENT_WAIT_NANOS;
			}
			long left = ANNOUNCEMENT_WAIT_NANOS - (System.nanoTime() - answered);
			if (left <= 0) {
				this.awaitingAnnouncement = false;
				return 0;
			}
			return left;
		}

	}

	private static long jitter(long nanos) {
		return nanos / 2 + ThreadLocalRandom.current().nextLong(nanos / 2 + 1);
	}

	/**
	 * Threads of this process that want one key: a fair gate with one permit (as a fair
	 * {@code Semaphore(1)}, in one object: one is made for every uncontended acquisition), and
	 * how many threads use it. A gate whose users dropped to zero is never joined again.
	 */
	static final class Gate extends AbstractQueuedSynchronizer {

		private static final VarHandle USERS;

		static {
			try {
				USERS = MethodHandles.lookup().findVarHandle(Gate.class, "users", int.class);
			}
			catch (ReflectiveOperationException ex) {
				throw new ExceptionInInitializerError(ex);
			}
		}

		private volatile int users = 1;

		Gate() {
			setState(1);
		}

		/** Takes the permit, waiting at most {@code nanos} behind the threads queued before. */
		boolean tryEnter(long nanos) throws InterruptedException {
			return tryAcquireSharedNanos(1, nanos);
		}

		/** Gives the permit back. */
		void exit() {
			releaseShared(1);
		}

		/** One more user, unless the last one has left. */
		boolean join() {
			int current;
			do {
				current = this.users;
				if (current == 0) {
					return false;
				}
			}
			while (!USERS.compareAndSet(this, current, current + 1));
			return true;
		}

		/** One user less; true for the last one. */
		boolean leave() {
			return (int) USERS.getAndAdd(this, -1) == 1;
		}

		@Override
		protected int tryAcquireShared(int acquires) {
			while (true) {
				if (hasQueuedPredecessors()) {
					return -1;
				}
				int available = getState();
				int remaining = available - acquires;
				if (remaining < 0 || compareAndSetState(available, remaining)) {
					return remaining;
				}
			}
		}

		@Override
		protected boolean tryReleaseShared(int releases) {
			while (true) {
				int current = getState();
				if (compareAndSetState(current, current + releases)) {
					return true;
				}
			}
		}

	}

}
