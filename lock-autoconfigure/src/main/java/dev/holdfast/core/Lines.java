package dev.holdfast.core;

import java.util.ArrayDeque;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.WaitQueue;
import dev.holdfast.spi.WaiterHandoff;

/**
 * The acquisitions of one template that wait, in one line per key (ACQ-1 in docs/DESIGN.md),
 * and what wakes them. Leaving the line (lock taken, wait over, failure) makes the next one the
 * head and wakes it; a line exists only while an acquisition is in it. The head is woken by the
 * backend's release events for its key (one subscription per template, opened by the first
 * waiter; none on a WaitQueue backend, whose queue wakes them), by a reservation for its owner,
 * by its own release of the key where the backend announces releases and records no waiters,
 * and by an interruption of the events (it then polls); changed in {@link ConcurrentHashMap#compute}, no I/O.
 */
final class Lines implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(DefaultLockTemplate.class);

	/** For how long after the subscription was opened a waiter polls fast while it does not listen yet. */
	private static final long NOT_LISTENING_WINDOW_NANOS = TimeUnit.SECONDS.toNanos(10);

	private final @Nullable ReleaseEvents events;

	private final @Nullable WaiterHandoff handoff;

	private final ConcurrentHashMap<String, Line> lines = new ConcurrentHashMap<>();

	/** The waiting permit calls a release of a slot without a line here wakes (SEM-8). */
	final SlotWakes slotWakes = new SlotWakes();

	private final ReentrantLock subscribeLock = new ReentrantLock();

	private volatile @Nullable AutoCloseable subscription;

	private volatile long subscribeRetryAtNanos;

	private volatile long subscribedAtNanos;

	private volatile boolean closed;

	Lines(LockBackend backend) {
		this.events = (backend instanceof ReleaseEvents events && !(backend instanceof WaitQueue)) ? events : null;
		this.handoff = (backend instanceof WaiterHandoff waiterHandoff) ? waiterHandoff : null;
	}

	/** One key's line: its head, and the acquisitions behind it in arrival order. */
	private static final class Line {

		volatile @Nullable Acquisition head;

		final ArrayDeque<Acquisition> behind = new ArrayDeque<>(2);

	}

	/** Joins the line of the acquisition's key; true if it is the head now. */
	boolean join(Acquisition acquisition) {
		Line line = this.lines.compute(acquisition.key, (key, current) -> {
			Line joined = (current != null) ? current : new Line();
			if (joined.head == null) {
				joined.head = acquisition;
			}
			else {
				joined.behind.add(acquisition);
			}
			return joined;
		});
		return line.head == acquisition;
	}

	/**
	 * Leaves the line (as its head or from behind); the next one becomes the head and is woken.
	 * A head that leaves because the backend failed ({@code failure}) fails every acquisition
	 * behind it with that failure: the backend is not reachable for them either, and each would
	 * otherwise fail one network timeout after the one ahead of it.
	 */
	void leave(Acquisition acquisition, @Nullable RuntimeException failure) {
		Acquisition[] next = new Acquisition[1];
		Acquisition[][] failed = new Acquisition[1][];
		this.lines.computeIfPresent(acquisition.key, (key, line) -> {
			if (line.head != acquisition) {
				line.behind.remove(acquisition);
				return line;
			}
			if (failure != null && !line.behind.isEmpty()) {
				failed[0] = line.behind.toArray(new Acquisition[0]);
				return null;
			}
			line.head = line.behind.poll();
			next[0] = line.head;
			return (line.head != null) ? line : null;
		});
		if (next[0] != null) {
			next[0].wake();
		}
		if (failed[0] != null) {
			for (Acquisition behind : failed[0]) {
				behind.failedAhead(failure);
			}
		}
	}

	/** Whether {@code acquisition} is the head of its line. */
	boolean isHead(Acquisition acquisition) {
		Line line = this.lines.get(acquisition.key);
		return line != null && line.head == acquisition;
	}

	/** Whether an acquisition of this template waits for {@code key}. */
	boolean wanted(String key) {
		return this.lines.containsKey(key);
	}

	/**
	 * The owner of the head of {@code key}'s line, the waiter a release names: {@code null} if none,
	 * or if the head asks for a read hold, which cannot claim a reservation (RWL-8).
	 */
	@Nullable String nextOwner(String key) {
		Line line = this.lines.get(key);
		Acquisition head = (line != null) ? line.head : null;
		return (head != null && !head.shared) ? head.owner : null;
	}

	/** Whether the head of {@code key}'s line asks for the lock itself, not a read hold (RWL-8). */
	boolean wantedByWriter(String key) {
		Line line = this.lines.get(key);
		Acquisition head = (line != null) ? line.head : null;
		return head != null && !head.shared;
	}

	/**
	 * A release event of {@code key}: wakes the head of its line, or, with no line, a waiting
	 * permit call of its semaphore (SEM-8).
	 */
	void wake(String key) {
		if (!wakeHead(key)) {
			this.slotWakes.released(key);
		}
	}

	/** Wakes the head of {@code key}'s line; false if it has none. */
	private boolean wakeHead(String key) {
		Line line = this.lines.get(key);
		Acquisition head = (line != null) ? line.head : null;
		if (head != null) {
			head.wake();
		}
		return head != null;
	}

	/** Wakes every acquisition of every line (events interrupted, or the template shuts down). */
	void wakeAll() {
		for (Line line : this.lines.values()) {
			Acquisition head = line.head;
			if (head != null) {
				head.wake();
			}
		}
	}

	/**
	 * This template's release of {@code key} was answered: wakes its waiter where the backend
	 * announces releases and records no waiters (a recorded waiter is woken by its reservation;
	 * on a backend without events every waiter polls, so none is woken ahead of the others).
	 */
	void releasedHere(String key) {
		if (this.handoff == null && announcing()) {
			// Not the permit calls' registry: the release's own event reaches it (SEM-8).
			wakeHead(key);
		}
	}

	private void reserved(String key, String owner) {
		Line line = this.lines.get(key);
		Acquisition head = (line != null) ? line.head : null;
		if (head != null && head.owner.equals(owner)) {
			head.wake();
		}
	}

	/** Whether the backend announces releases now (else waiters poll with short pauses). */
	boolean announcing() {
		return this.events != null && this.events.announcesReleases();
	}

	/**
	 * Whether waiters should look again soon: the subscription was opened less than 10 s ago and
	 * does not listen yet, so a release now is announced to nobody.
	 */
	boolean notListeningYet() {
		return this.events != null && System.nanoTime() - this.subscribedAtNanos < NOT_LISTENING_WINDOW_NANOS
				&& !this.events.isListening();
	}

	/**
	 * Whether release events reach this template now; subscribes on first use once the backend
	 * announces releases (a JDBC backend knows only after its first statement whether it can).
	 */
	boolean subscribed() {
		if (this.subscription != null) {
			return true;
		}
		if (this.events == null || !this.events.announcesReleases()
				|| System.nanoTime() - this.subscribeRetryAtNanos < 0) {
			return false;
		}
		this.subscribeLock.lock();
		try {
			if (this.subscription == null && !this.closed) {
				this.subscription = (this.handoff != null) ? this.handoff.subscribe(this::wake, this::reserved)
						: this.events.subscribe(this::wake, this::wakeAll);
				this.subscribedAtNanos = System.nanoTime();
			}
			return this.subscription != null;
		}
		catch (RuntimeException ex) {
			this.subscribeRetryAtNanos = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
			logger.warn("Holdfast could not subscribe to release events of the backend; waiters poll until it can",
					ex);
			return false;
		}
		finally {
			this.subscribeLock.unlock();
		}
	}

	/** Whether a release subscription is open (it may not listen yet). */
	boolean hasSubscription() {
		return this.subscription != null;
	}

	/** How many keys have a line now. */
	int size() {
		return this.lines.size();
	}

	/**
	 * Closes the release subscription; a later waiter opens it again, unless {@code forGood}:
	 * then none opens any more.
	 */
	void closeSubscription(boolean forGood) {
		AutoCloseable current;
		this.subscribeLock.lock();
		try {
			this.closed |= forGood;
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

	@Override
	public void close() {
		closeSubscription(true);
	}

}
