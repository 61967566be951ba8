package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockListener.LockObservation;
import dev.holdfast.spi.AcquireResult;

/**
 * One acquisition: the state and the rules both drivers share (see {@link Acquisitions}); a
 * driver attempts, waits and calls these.
 */
abstract class Acquisition {

	final Acquisitions room;

	final String name;

	final String key;

	/** The owner token of the attempt in progress (ACQ-2: one per attempt unless its attempts record it). */
	volatile String owner;

	private int attempts;

	final Duration ttl;

	final boolean renew;

	final LockObservation observation;

	final long start = System.nanoTime();

	final long deadline;

	/** Whether it waits, and so queues in its key's line. */
	final boolean waits;

	/** Whether its attempts record it as a waiter on the backend. */
	final boolean records;

	/** Whether it asks for a read hold (RWL-2): its attempts are the backend's shared attempt. */
	final boolean shared;

	/** A permit call's wait on one slot, registered for a release of another slot (SEM-8), or {@code null}. */
	@Nullable SlotWake slotWake;

	/** Whether it has been the head of its line: a release may have named (recorded) it. */
	volatile boolean wasHead;

	/** The backend failure that ended this acquisition, or the one ahead of it in its line. */
	volatile @Nullable LockBackendException failure;

	/** Confined to the attempt in progress: attempts never overlap. */
	private boolean notifying;

	private long pause;

	private boolean retriedOwnRelease;

	Acquisition(Acquisitions room, String name, String key, Duration ttl, boolean renew, Duration wait,
			LockObservation observation) {
		this(room, name, key, ttl, renew, wait, observation, false);
	}

	Acquisition(Acquisitions room, String name, String key, Duration ttl, boolean renew, Duration wait,
			LockObservation observation, boolean shared) {
		this.room = room;
		this.shared = shared;
		this.owner = room.owners.next();
		this.name = name;
		this.key = key;
		this.ttl = ttl;
		this.renew = renew;
		this.observation = observation;
		this.deadline = this.start + wait.toNanos();
		this.waits = wait.toNanos() > 0;
		this.records = this.waits && room.handoff != null && !shared;
		if (this.waits) {
			room.waiting.incrementAndGet();
		}
		this.notifying = room.lines.announcing();
		this.pause = initialPause(this.notifying);
	}

	/** Before each attempt: a new owner token, unless its attempts record it (see {@link #owner}). */
	final void nextAttempt() {
		if (this.attempts++ > 0 && !this.records) {
			this.owner = this.room.owners.next();
		}
	}

	/** Wakes this acquisition's wait (for the head of its line, or for a release). */
	abstract void wake();

	/** Whether a release of another slot woke this permit call's wait (SEM-8): it ends at its next pause. */
	final boolean slotReleased() {
		SlotWake wake = this.slotWake;
		return wake != null && wake.woken;
	}

	/** The head of its line failed on the backend while this one waited behind it: it fails too. */
	final void failedAhead(RuntimeException ahead) {
		this.failure = new LockBackendException("The " + this.room.failures.backendName()
				+ " backend failed for the acquisition ahead of this one in the line of lock '"
				+ this.room.failures.shown(this.key) + "': " + ahead.getMessage(), ahead);
		wake();
	}

	/** Joins its line; true when it is the head (and attempts) now. */
	final boolean join() {
		if (this.slotWake != null) {
			this.room.lines.slotWakes.enter(this.slotWake, this);
		}
		return this.room.lines.join(this) && becameHead();
	}

	/** Whether it is its line's head now; if so, it listens to release events from now on. */
	final boolean becameHead() {
		if (!this.wasHead) {
			if (!this.room.lines.isHead(this)) {
				return false;
			}
			this.wasHead = true;
			this.room.lines.subscribed();
		}
		return true;
	}

	/** How long each attempt records this waiter: two poll intervals, or the wait left (10 ms steps). */
	final Duration recordFor() {
		long left = this.deadline - System.nanoTime();
		long full = this.room.recordForNanos;
		if (left >= full) {
			return Duration.ofNanos(full);
		}
		long millis = Math.max(10, (TimeUnit.NANOSECONDS.toMillis(Math.max(left, 0)) + 9) / 10 * 10);
		return Duration.ofMillis(Math.min(millis, TimeUnit.NANOSECONDS.toMillis(full)));
	}

	final HeldLease took(long token, long sentNanos) {
		return this.room.leases.register(this.name, this.key, this.owner, token, this.ttl, this.renew,
				sentNanos, this.observation);
	}

	/** An attempt failed: its lock, if it took one, is released in the background. */
	final LockBackendException failed(Throwable ex) {
		return failed(ex, this.owner);
	}

	/**
	 * An attempt with {@code owner} failed: its lock, if it took one, is released in the
	 * background; {@code null} for a local reader's attempt with its read lease's owner, whose
	 * hold the lease's last hold releases (RWL-2).
	 */
	final LockBackendException failed(Throwable ex, @Nullable String owner) {
		if (this.room.queue == null && owner != null) {
			this.room.background.releaseUnknownOutcome(this.key, owner);
		}
		LockBackendException failure = this.room.failures.of(ex, "acquire", this.key);
		this.failure = failure;
		return failure;
	}

	/**
	 * After a refusal: this template's release of the key in flight when the attempt was sent
	 * ({@code before}) or now, to wait for before attempting again; {@code null} if none (or it
	 * was retried after the deadline already).
	 */
	final @Nullable CompletableFuture<Void> ownRelease(@Nullable HeldLease before) {
		HeldLease own = (before != null) ? before : this.room.leases.releaseInFlight(this.key);
		if (this.retriedOwnRelease || own == null) {
			return null;
		}
		this.retriedOwnRelease = this.deadline - System.nanoTime() <= 0;
		return LocalLeases.answerOrExpiry(own);
	}

	/**
	 * How long to wait, instead of attempting, because this template holds the key (or is
	 * releasing it) on a backend that draws between instances at a release
	 * ({@link dev.holdfast.spi.AnnouncedReleases#drawsNextInstance()}): an attempt would mark the
	 * lock as wanted by this instance, and the release would draw against itself; the release's
	 * answer wakes the head. At most a poll interval and the wait left; 0 to attempt now.
	 */
	final long heldHereNanos() {
		if (this.room.drawing == null || !this.waits || !this.room.drawing.drawsNextInstance()) {
			return 0;
		}
		HeldLease here = this.shared ? this.room.leases.get(this.key) : null;
		if (here != null && here.isShared()) {
			// R4: only a holder that conflicts keeps this head waiting.
			return 0;
		}
		long held = this.room.leases.holdNanos(this.key);
		long left = this.deadline - System.nanoTime();
		return (held > 0 && left > 0) ? Math.min(Math.min(held, left), this.room.pollNanos) : 0;
	}

	/** After a refusal: how long to wait before the next attempt, in nanoseconds; 0 to give up. */
	final long pauseAfter(AcquireResult result) {
		long remaining = this.deadline - System.nanoTime();
		if (remaining <= 0) {
			return 0;
		}
		boolean announcing = this.room.lines.announcing();
		if (announcing) {
			// Opened by the first waiter that finds the backend announcing (or by prepare()).
			this.room.lines.subscribed();
		}
		if (announcing != this.notifying) {
			// The backend started or stopped announcing releases: pause as such a backend's waiters do.
			this.notifying = announcing;
			this.pause = initialPause(announcing);
		}
		long sleep = Math.min(remaining, Acquisitions.jitter(this.pause));
		if (result.holderRemainingMillis() >= 0) {
			sleep = Math.min(sleep, TimeUnit.MILLISECONDS.toNanos(result.holderRemainingMillis() + 1));
		}
		if (announcing && this.room.lines.notListeningYet()) {
			// The subscription opens in the background: a release now is announced to nobody.
			sleep = Math.min(sleep, Acquisitions.jitter(Acquisitions.NOT_LISTENING_PAUSE_NANOS));
		}
		this.pause = Math.min(this.pause * 2, this.room.pollNanos);
		return Math.max(sleep, 1);
	}

	private long initialPause(boolean announcing) {
		return announcing ? this.room.pollNanos : Math.min(Acquisitions.MIN_PAUSE_NANOS, this.room.pollNanos);
	}

	/**
	 * The acquisition is over: it leaves its line and, if it may be recorded and took no lock, withdraws;
	 * a wake for another slot (SEM-8) it did not use, having taken its own or {@code threw}, passes on.
	 */
	final void end(boolean took, boolean threw) {
		if (!this.waits) {
			return;
		}
		try {
			if (this.slotWake != null) {
				this.room.lines.slotWakes.leave(this.slotWake, took || threw);
			}
			boolean named = this.wasHead || this.room.lines.isHead(this);
			this.room.lines.leave(this, this.failure);
			if (this.records && named && !took) {
				this.room.background.withdraw(this.key, this.owner);
			}
		}
		finally {
			this.room.waiting.decrementAndGet();
		}
	}

	/** The {@code mode} tag of what it asks for (OBS-14). */
	final String mode() {
		return LockKeys.mode(this.key, this.shared);
	}

	final Duration waited() {
		return Duration.ofNanos(System.nanoTime() - this.start);
	}

}
