package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockListener;
import dev.holdfast.spi.AnnouncedReleases;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.WaiterHandoff;

/**
 * How a template gives its leases back to the backend: owner-checked, in the background on an
 * {@link AsyncLockBackend} with {@link LockSettings#releaseInBackground()} on (else on the
 * caller's thread), the lease staying among the template's leases, not valid, until the backend
 * answered. A release names this template's next waiter to a backend that records waiters, and
 * asks one that draws between instances to draw when a waiter here wants the key; its answer
 * wakes that waiter where the backend announces releases and records none; a failed release is
 * reported and sent again ({@link BackgroundCalls}). The rules: docs/DESIGN.md, "Release".
 */
final class Releases {

	/** Releases in flight per template beyond which {@code close()} waits for its own. */
	static final int MAX_IN_FLIGHT = 1024;

	private static final Log logger = LogFactory.getLog(DefaultLockTemplate.class);

	private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

	private final LockBackend backend;

	private final @Nullable AsyncLockBackend async;

	private final @Nullable WaiterHandoff handoff;

	/** A backend that may draw between instances ({@link AnnouncedReleases#drawsNextInstance()}, asked at each release). */
	private final @Nullable AnnouncedReleases drawing;

	private final boolean background;

	private final Lines lines;

	private final BackgroundCalls calls;

	private final Failures failures;

	private final LockListener listener;

	private final AtomicInteger inFlight = new AtomicInteger();

	Releases(LockBackend backend, boolean background, Lines lines, BackgroundCalls calls, Failures failures,
			LockListener listener) {
		this.backend = backend;
		this.async = (backend instanceof AsyncLockBackend asyncBackend) ? asyncBackend : null;
		this.handoff = (backend instanceof WaiterHandoff waiterHandoff) ? waiterHandoff : null;
		this.drawing = (backend instanceof AnnouncedReleases announced) ? announced : null;
		this.background = background && this.async != null;
		this.lines = lines;
		this.calls = calls;
		this.failures = failures;
		this.listener = listener;
	}

	/** The last hold of {@code lease} ended ({@code Lease.close()}). */
	void release(HeldLease lease) {
		if (!this.background) {
			releaseNow(lease);
			return;
		}
		CompletableFuture<Void> done = send(lease);
		if (done != null && this.inFlight.get() > MAX_IN_FLIGHT) {
			// Back-pressure: this caller waits for its own release, as without the background.
			try {
				done.get();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
			catch (ExecutionException ex) {
				// Never: the future completes normally, failures are reported.
			}
		}
	}

	/**
	 * Releases {@code lease} without blocking where the backend can; the stage completes when the
	 * backend answered, normally also when the release failed (it was reported).
	 */
	CompletionStage<Void> releaseAsync(HeldLease lease) {
		if (this.async == null) {
			releaseNow(lease);
			return DONE;
		}
		CompletableFuture<Void> done = send(lease);
		return (done != null) ? done : DONE;
	}

	/** Forgets {@code lease} without a backend call (its lock expires there by itself); never a read lease (RWL-18). */
	void forget(HeldLease lease) {
		Answer answer = begin(lease);
		if (answer != null) {
			answer.accept(null, null);
		}
	}

	/**
	 * Marks {@code lease} released and counts its release in flight; {@code null} if it was
	 * released already. A lease found no longer valid now, that was not reported lost, is
	 * reported lost now: its code ran past its lease.
	 */
	private @Nullable Answer begin(HeldLease lease) {
		boolean valid = lease.isValid();
		HeldLease.State before = lease.markReleased();
		if (before == HeldLease.State.RELEASED) {
			return null;
		}
		if (before == HeldLease.State.ACTIVE && !valid) {
			lease.leases().reportLost(lease, "its lease ran out before it was released (held past its time to live, "
					+ "or the backend could not vouch for it)");
		}
		Answer answer = new Answer(lease, before == HeldLease.State.ACTIVE && valid);
		lease.startReleasing(answer);
		this.inFlight.incrementAndGet();
		return answer;
	}

	/** Releases {@code lease} on the calling thread. */
	private void releaseNow(HeldLease lease) {
		Answer answer = begin(lease);
		if (answer == null) {
			return;
		}
		Boolean released = null;
		Throwable failure = null;
		try {
			String key = lease.key();
			if (this.handoff != null) {
				released = this.handoff.release(key, lease.owner(), this.lines.nextOwner(key));
			}
			else if (this.drawing != null && this.lines.wantedByWriter(key) && this.lines.hasSubscription()
					&& this.drawing.drawsNextInstance()) {
				released = this.drawing.releaseWanted(key, lease.owner());
			}
			else {
				released = this.backend.release(key, lease.owner());
			}
		}
		catch (RuntimeException ex) {
			failure = ex;
		}
		finally {
			answer.accept(released, failure);
		}
	}

	/** Sends the release of {@code lease} without waiting; {@code null} if it was released already. */
	private @Nullable CompletableFuture<Void> send(HeldLease lease) {
		AsyncLockBackend nonBlocking = this.async;
		Answer answer = (nonBlocking != null) ? begin(lease) : null;
		if (answer == null) {
			return null;
		}
		try {
			if (this.handoff != null) {
				this.handoff.releaseAsync(lease.key(), lease.owner(), this.lines.nextOwner(lease.key()), answer);
			}
			else {
				nonBlocking.releaseAsync(lease.key(), lease.owner(), answer);
			}
		}
		catch (Throwable ex) {
			// Whatever it was, the lease must not stay "releasing" with its stage never completed.
			answer.accept(null, ex);
		}
		return answer;
	}

	/** Releases sent and not answered yet. */
	int inFlight() {
		return this.inFlight.get();
	}

	/**
	 * Waits until no release is in flight, at most {@code timeout}.
	 * @return whether none is in flight any more
	 */
	boolean awaitInFlight(Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (this.inFlight.get() > 0) {
			if (deadline - System.nanoTime() <= 0) {
				return false;
			}
			TimeUnit.MILLISECONDS.sleep(1);
		}
		return true;
	}

	/** The answer to one release: completes once, when the backend answered or the call failed. */
	private final class Answer extends CompletableFuture<Void> implements BiConsumer<@Nullable Boolean, @Nullable Throwable> {

		private final HeldLease lease;

		/** Whether the lease was valid when released: an answer "not held" is then a loss. */
		private final boolean valid;

		private final AtomicInteger answers = new AtomicInteger();

		Answer(HeldLease lease, boolean valid) {
			this.lease = lease;
			this.valid = valid;
		}

		@Override
		public void accept(@Nullable Boolean released, @Nullable Throwable ex) {
			// Once, even if a backend both answered and threw.
			if (this.answers.getAndIncrement() != 0) {
				return;
			}
			HeldLease lease = this.lease;
			try {
				lease.leases().forget(lease);
				if (ex != null) {
					LockBackendException failure = Releases.this.failures.of(ex, "release", lease.key());
					logger.warn("Holdfast could not release lock '" + Releases.this.failures.shown(lease.key())
							+ "'; sending it again in the background, else it expires on the backend within "
							+ lease.ttl(), failure);
					Releases.this.listener.releaseFailed(lease.name(), Releases.this.failures.backendName(),
							lease.mode(), failure);
					Releases.this.calls.retryRelease(lease.key(), lease.owner());
				}
				else if (Boolean.FALSE.equals(released) && this.valid) {
					lease.leases().reportLost(lease, "the backend no longer had it under this owner when it was released");
				}
				Releases.this.lines.releasedHere(lease.key());
				lease.observation().released();
				if (Releases.this.listener != LockListener.NONE) {
					Releases.this.listener.released(lease.name(), Releases.this.failures.backendName(), lease.mode(),
							lease.heldFor());
				}
			}
			finally {
				Releases.this.inFlight.decrementAndGet();
				complete(null);
				lease.releaseAnswered();
			}
		}

	}

}
