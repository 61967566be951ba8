package dev.holdfast.leader;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LeaderTerm;
import dev.holdfast.Leadership;
import dev.holdfast.LeadershipEvent;
import dev.holdfast.LeadershipGrantedEvent;
import dev.holdfast.LeadershipRevokedEvent;
import dev.holdfast.LeadershipRevokedEvent.Reason;
import dev.holdfast.Lease;

/**
 * One group's leadership on one instance (DESIGN.md, Leadership): FOLLOWER (campaigning while
 * the elections run), LEADER while a term's lease is valid, CLOSED. Every transition happens
 * under {@link #lock}, which guards no I/O; the events it causes are queued on the delivery thread
 * there, so that they are delivered in the order of the transitions (LDR-4); the decisions
 * (campaigns, checks) run on the template's timer, which no listener and no backend call delays.
 */
final class ElectedLeadership implements Leadership {

	private static final Log logger = LogFactory.getLog(DefaultLeaderElections.class);

	/** The longest wait of {@link #awaitLeadership}: about 146 years, so that its deadline never overflows. */
	private static final Duration LONGEST_WAIT = Duration.ofNanos(Long.MAX_VALUE / 2);

	private final String group;

	private final LeaderRuntime runtime;

	private final Runnable onClose;

	private final List<Consumer<? super LeadershipEvent>> listeners = new CopyOnWriteArrayList<>();

	private final Object lock = new Object();

	private boolean closed;

	/** Whether the elections run: a follower campaigns only then. */
	private boolean running;

	/** Read without the lock by isLeader() and term(). */
	private volatile @Nullable Term term;

	/** An attempt is out; a wake-up meanwhile makes the next one start at once. */
	private boolean attempting;

	private boolean wokenWhileAttempting;

	private @Nullable CompletableFuture<@Nullable Lease> attempt;

	/** The next campaign, or the next check of the term. */
	private @Nullable ScheduledFuture<?> timer;

	private long holdOffUntilNanos = System.nanoTime();

	private boolean failing;

	/** Completed with the next term granted, or with null when closed; replaced at each revocation. */
	private CompletableFuture<@Nullable Term> nextGrant = new CompletableFuture<>();

	ElectedLeadership(String group, LeaderRuntime runtime, Runnable onClose) {
		this.group = group;
		this.runtime = runtime;
		this.onClose = onClose;
	}

	@Override
	public String group() {
		return this.group;
	}

	@Override
	public boolean isLeader() {
		Term current = this.term;
		return current != null && current.isValid();
	}

	@Override
	public Optional<LeaderTerm> term() {
		Term current = this.term;
		return (current != null && current.isValid()) ? Optional.of(current) : Optional.empty();
	}

	@Override
	public Optional<LeaderTerm> awaitLeadership(Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + ((timeout.compareTo(LONGEST_WAIT) > 0) ? LONGEST_WAIT : timeout).toNanos();
		while (true) {
			CompletableFuture<@Nullable Term> next;
			synchronized (this.lock) {
				if (this.closed) {
					return Optional.empty();
				}
				if (this.term != null && this.term.isValid()) {
					return Optional.of(this.term);
				}
				next = this.nextGrant;
			}
			long left = deadline - System.nanoTime();
			if (left <= 0) {
				return Optional.empty();
			}
			try {
				Term granted = next.get(left, TimeUnit.NANOSECONDS);
				if (granted == null) {
					return Optional.empty();
				}
				if (granted.isValid()) {
					return Optional.of(granted);
				}
				// Granted and already past: its revocation (which replaces the future) comes by its check.
				granted.revocation().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
			}
			catch (TimeoutException ex) {
				return Optional.empty();
			}
			catch (ExecutionException ex) {
				throw new IllegalStateException(ex.getCause());
			}
		}
	}

	@Override
	public void yield() {
		synchronized (this.lock) {
			// Also a follower (an attempt may be out): a lease it brings within the hold-off is given back.
			this.holdOffUntilNanos = System.nanoTime() + this.runtime.yieldHoldOffNanos();
			endTerm(Reason.YIELDED);
		}
	}

	@Override
	public AutoCloseable addListener(Consumer<? super LeadershipEvent> listener) {
		synchronized (this.lock) {
			this.listeners.add(listener);
			Term current = this.term;
			if (current != null) {
				// Queued behind the events before it and before this term's revocation.
				LeadershipEvent granted = new LeadershipGrantedEvent(this, current);
				this.runtime.enqueue(() -> {
					if (this.listeners.contains(listener)) {
						this.runtime.deliver(List.of(listener), granted);
					}
				});
			}
		}
		return () -> this.listeners.remove(listener);
	}

	@Override
	public void close() {
		CompletableFuture<@Nullable Lease> out;
		synchronized (this.lock) {
			if (this.closed) {
				return;
			}
			out = stop();
			this.closed = true;
			this.nextGrant.complete(null);
		}
		if (out != null) {
			out.cancel(false);
		}
		this.onClose.run();
	}

	/** The elections start: campaign from now on. */
	void start() {
		synchronized (this.lock) {
			if (this.closed || this.running) {
				return;
			}
			this.running = true;
		}
		try {
			this.runtime.execute(this::campaign);
		}
		catch (RejectedExecutionException ex) {
			logger.debug("Leader group '" + this.group + "' started after its template closed: no campaign", ex);
		}
	}

	/** The elections stop: a current term is revoked (SHUTDOWN) and the campaign pauses. */
	void suspend() {
		CompletableFuture<@Nullable Lease> out;
		synchronized (this.lock) {
			out = stop();
		}
		if (out != null) {
			out.cancel(false);
		}
	}

	/**
	 * A release of the group's key was announced: attempt now (after a yield's hold-off). An
	 * announcement that races the elections' stop finds the timer gone: nothing to do.
	 */
	void wake() {
		try {
			this.runtime.execute(this::campaign);
		}
		catch (RejectedExecutionException ex) {
			logger.debug("Leader group '" + this.group + "': a release announced after the elections stopped", ex);
		}
	}

	/** The term's lease may have turned invalid before its end (lost, a session suspended): check now. */
	void checkNow() {
		if (this.runtime.schedule(this::check, 0) == null) {
			// The template closed before the elections (not Spring's order): check here.
			check();
		}
	}

	boolean isClosed() {
		synchronized (this.lock) {
			return this.closed;
		}
	}

	private @Nullable CompletableFuture<@Nullable Lease> stop() {
		this.running = false;
		if (this.term != null) {
			endTerm(Reason.SHUTDOWN);
		}
		cancelTimer();
		CompletableFuture<@Nullable Lease> out = this.attempt;
		this.attempt = null;
		return out;
	}

	private void campaign() {
		synchronized (this.lock) {
			if (this.closed || !this.running || this.term != null) {
				return;
			}
			if (this.attempting) {
				this.wokenWhileAttempting = true;
				return;
			}
			long holdOff = this.holdOffUntilNanos - System.nanoTime();
			if (holdOff > 0) {
				reschedule(this::campaign, holdOff);
				return;
			}
			cancelTimer();
			this.attempting = true;
			this.wokenWhileAttempting = false;
		}
		CompletableFuture<@Nullable Lease> out;
		try {
			out = this.runtime.attempt(this.group);
		}
		catch (RuntimeException ex) {
			out = CompletableFuture.failedFuture(ex);
		}
		boolean stopped;
		synchronized (this.lock) {
			// Closed or suspended meanwhile (stop() found no attempt to cancel): cancel it here.
			stopped = this.closed || !this.running;
			if (!stopped && this.attempting && !out.isDone()) {
				this.attempt = out;
			}
		}
		if (stopped) {
			out.cancel(false);
		}
		out.whenComplete(this::attempted);
	}

	private void attempted(@Nullable Lease lease, @Nullable Throwable failure) {
		Lease giveBack = lease;
		try {
			synchronized (this.lock) {
				this.attempting = false;
				this.attempt = null;
				boolean heldOff = this.holdOffUntilNanos - System.nanoTime() > 0;
				if (lease != null && !this.closed && this.running && this.term == null && !heldOff && fresh(lease)) {
					grant(lease);
					giveBack = null;
				}
				else if (!this.closed && this.running && this.term == null) {
					if (failure != null && !(failure instanceof java.util.concurrent.CancellationException)) {
						failed(failure);
					}
					// A waiting acquisition ran its whole wait, or a release was announced meanwhile:
					// again at once (after a hold-off); a refused try-once attempt, a failure or a
					// lease given back (too late, held off): after a poll pause, never in a tight loop.
					boolean now = lease == null && failure == null
							&& (this.wokenWhileAttempting || this.runtime.template.supportsNonBlocking());
					reschedule(this::campaign, now ? 0 : this.runtime.pollNanos());
				}
			}
		}
		finally {
			if (giveBack != null) {
				this.runtime.release(giveBack);
			}
		}
		// After a first call the backend knows whether it can announce releases (PostgreSQL).
		this.runtime.listenForReleases();
	}

	/**
	 * Whether a lease just taken can start a term: valid with more than the revocation margin
	 * left. An answer that came late (a first connection) may bring a lease already at its end,
	 * which would be granted and revoked at once.
	 */
	private boolean fresh(Lease lease) {
		return lease.isValid()
				&& Duration.between(this.runtime.clock().instant(), lease.expiresAt()).toNanos() > this.runtime.revokeMarginNanos;
	}

	private void grant(Lease lease) {
		if (this.failing) {
			this.failing = false;
			logger.info("Leader group '" + this.group + "' reaches its backend again");
		}
		Term granted = new Term(this.group, lease, this.runtime.clock().instant());
		this.term = granted;
		this.nextGrant.complete(granted);
		LeadershipEvent event = new LeadershipGrantedEvent(this, granted);
		List<Consumer<? super LeadershipEvent>> told = List.copyOf(this.listeners);
		this.runtime.enqueue(() -> this.runtime.deliver(told, event));
		reschedule(this::check, 0);
	}

	/**
	 * On the timer, every poll interval and when a tenth of the term's validity is left:
	 * revokes a term no longer valid or not renewed by then (LDR-3).
	 */
	private void check() {
		synchronized (this.lock) {
			Term current = this.term;
			if (current == null) {
				return;
			}
			long left = current.untilValidityEnd(this.runtime.clock()).toNanos();
			long margin = this.runtime.revokeMarginNanos;
			// The session's bound (ZK-8) moves with every heartbeat and may be shorter than the
			// margin: the check comes when it runs out, not a margin before, or terms would flap.
			long vouched = this.runtime.vouchedNanos();
			boolean valid = current.lease().isValid();
			if (valid && left > margin && vouched > 0) {
				long next = Math.min(this.runtime.pollInterval.toNanos(), Math.min(left - margin, vouched));
				reschedule(this::check, Math.max(1_000_000, next));
				return;
			}
			// Unrenewed into the last tenth of its validity: the backend does not answer. Not valid
			// with time left: the backend took the lease back (or, ZooKeeper, cannot vouch for it).
			endTerm((valid || left <= 0 || this.runtime.backendSuspended()) ? Reason.BACKEND_UNREACHABLE : Reason.LOST);
			reschedule(this::campaign, this.runtime.pollNanos());
		}
	}

	/**
	 * Ends the current term: revoked now, its event queued, its lease released after the event, or
	 * left to expire if a listener of it failed (LDR-8).
	 */
	private void endTerm(Reason reason) {
		Term ended = this.term;
		if (ended == null) {
			return;
		}
		this.term = null;
		ended.revoke();
		cancelTimer();
		this.nextGrant = new CompletableFuture<>();
		LeadershipEvent event = new LeadershipRevokedEvent(this, ended, reason);
		List<Consumer<? super LeadershipEvent>> told = List.copyOf(this.listeners);
		this.runtime.enqueue(() -> {
			if (this.runtime.deliver(told, event)) {
				this.runtime.release(ended.lease());
			}
			else {
				this.runtime.leaveToExpire(ended);
			}
		});
		if (reason == Reason.YIELDED) {
			reschedule(this::campaign, this.holdOffUntilNanos - System.nanoTime());
		}
		if (reason != Reason.SHUTDOWN) {
			logger.info("Holdfast no longer leads group '" + this.group + "' (term " + ended.fencingToken() + "): "
					+ reason);
		}
	}

	private void failed(Throwable failure) {
		if (!this.failing) {
			this.failing = true;
			logger.warn("Leader group '" + this.group + "' cannot campaign: " + failure.getMessage()
					+ "; trying again every " + this.runtime.pollInterval.toMillis() + " ms");
		}
		else if (logger.isDebugEnabled()) {
			logger.debug("Leader group '" + this.group + "' still cannot campaign", failure);
		}
	}

	private void reschedule(Runnable task, long delayNanos) {
		cancelTimer();
		this.timer = this.runtime.schedule(task, delayNanos);
	}

	private void cancelTimer() {
		ScheduledFuture<?> current = this.timer;
		if (current != null) {
			current.cancel(false);
			this.timer = null;
		}
	}

	@Override
	public String toString() {
		return "Leadership[" + this.group + ", " + (isLeader() ? "leader" : "follower") + "]";
	}

}
