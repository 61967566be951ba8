package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.jspecify.annotations.Nullable;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockListener.LockObservation;
import dev.holdfast.spi.AcquireResult;

/**
 * The non-blocking driver: each attempt is a backend callback, each wait a release event or a
 * timer on the JDK's shared delayed executor; retries run on the common fork-join pool. No
 * thread per lock or per waiter.
 */
final class NonBlockingAcquisition extends Acquisition {

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

	NonBlockingAcquisition(Acquisitions room, String name, String key, Duration ttl, boolean renew, Duration wait,
			LockObservation observation) {
		super(room, name, key, ttl, renew, wait, observation);
	}

	void start() {
		this.result.whenComplete((lease, ex) -> {
			end(lease != null, ex != null);
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
		if (this.room.draining && this.waits) {
			fail(this.room.shuttingDown(this.key));
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
					this.room.executor.execute(this::resume);
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
			this.room.executor.execute(this::resume);
			return;
		}
		CompletableFuture.delayedExecutor(Math.max(nanos, 1), TimeUnit.NANOSECONDS, this.room.executor)
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
		if (this.room.draining && this.waits) {
			fail(this.room.shuttingDown(this.key));
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
		long heldHere = heldHereNanos();
		if (heldHere > 0) {
			arm(heldHere);
			return;
		}
		HeldLease before = this.room.leases.releaseInFlight(this.key);
		nextAttempt();
		long sent = System.nanoTime();
		CompletionStage<AcquireResult> answer;
		try {
			answer = this.records
					? this.room.handoff.tryAcquireWaitingAsync(this.key, this.owner, this.ttl, recordFor())
					: this.room.async.tryAcquireAsync(this.key, this.owner, this.ttl);
		}
		catch (RuntimeException ex) {
			answer = CompletableFuture.failedFuture(ex);
		}
		answer.whenComplete((outcome, ex) -> answered(outcome, ex, sent, before));
	}

	private void answered(@Nullable AcquireResult outcome, @Nullable Throwable ex, long sent,
			@Nullable HeldLease before) {
		if (ex != null || outcome == null) {
			fail(failed((ex != null) ? ex : new IllegalStateException("no answer")));
			return;
		}
		if (outcome.acquired()) {
			if (this.result.isDone()) {
				// Ended (cancelled) while the attempt was in flight: give the lock back, never registered.
				this.room.background.retryRelease(this.key, this.owner);
				return;
			}
			LeaseHandle lease;
			try {
				lease = new LeaseHandle(took(outcome.fencingToken(), sent));
			}
			catch (RuntimeException failure) {
				this.room.background.retryRelease(this.key, this.owner);
				this.result.completeExceptionally(failure);
				return;
			}
			lease.detachFromThread();
			this.room.listener.acquired(this.name, this.room.failures.backendName(), mode(), waited());
			if (!this.result.complete(lease)) {
				// Cancelled while the lease was registered: give it back.
				lease.closeAsync();
			}
			return;
		}
		if (this.result.isDone()) {
			if (this.records) {
				// Refused after the acquisition ended (and withdrew): it recorded the waiter again.
				this.room.background.withdraw(this.key, this.owner);
			}
			return;
		}
		CompletableFuture<Void> own = ownRelease(before);
		if (own != null) {
			own.whenComplete((done, never) -> this.room.executor.execute(this::resume));
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
			this.room.listener.notAcquired(this.name, this.room.failures.backendName(), mode(), waited());
		}
	}

	private void fail(LockBackendException ex) {
		if (this.result.completeExceptionally(ex)) {
			this.room.listener.failed(this.name, this.room.failures.backendName(), mode(), waited(), ex);
		}
	}

}
