package dev.holdfast.core;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AsyncLeaseRenewal;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.SharedLocks;

/**
 * Renews every renewable lease of one template from its timer thread, which never blocks (REN-1):
 * a lease is due a third of its time to live after its last confirmation; each tick renews every
 * lease at least half-way to due, in one {@link LeaseRenewal#renew} call, so all leases of a
 * process cost one round trip per tick. The call is sent without blocking where the backend can
 * ({@link AsyncLeaseRenewal}), else made on the template's worker thread; its answer is handled on
 * the timer, and the reports of leases it finds lost (listeners) on the worker. One call at a
 * time: a tick while one is out waits for its answer, which schedules the next.
 */
final class LeaseRenewer {

	private static final Log logger = LogFactory.getLog(LeaseRenewer.class);

	private static final long MIN_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

	private static final long RETRY_AFTER_BUG_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

	private final LocalLeases local;

	private final Failures failures;

	private final LeaseRenewal renewal;

	/** Renews the read leases (RWL-5), where the backend gives them. */
	private final @Nullable SharedLocks shared;

	/**
	 * The template's held leases (a live view): the active ones that renew are renewed. No set of
	 * its own, so a lease costs the renewer nothing until a renewal is due.
	 */
	private final Collection<HeldLease> leases;

	private final EngineThreads threads;

	private final ReentrantLock scheduleLock = new ReentrantLock();

	private @Nullable ScheduledFuture<?> next;

	private long nextAtNanos;

	/** A renewal call is out (touched on the timer thread only). */
	private boolean inFlight;

	LeaseRenewer(LocalLeases local, LeaseRenewal renewal, @Nullable SharedLocks shared, Failures failures,
			Collection<HeldLease> leases, EngineThreads threads) {
		this.local = local;
		this.shared = shared;
		this.failures = failures;
		this.leases = leases;
		this.renewal = renewal;
		this.threads = threads;
	}

	/** A renewable lease was registered in the template's held leases. */
	void add(HeldLease lease) {
		scheduleBy(lease.renewDueNanos());
	}

	private void scheduleBy(long dueNanos) {
		this.scheduleLock.lock();
		try {
			if (this.threads.isShutdown()) {
				return;
			}
			if (this.next == null || dueNanos - this.nextAtNanos < 0) {
				if (this.next != null) {
					this.next.cancel(false);
				}
				this.nextAtNanos = dueNanos;
				this.next = this.threads.schedule(this::tick, dueNanos - System.nanoTime());
			}
		}
		catch (RejectedExecutionException ex) {
			// The template closed meanwhile: nothing renews any more.
		}
		finally {
			this.scheduleLock.unlock();
		}
	}

	private void tick() {
		this.scheduleLock.lock();
		try {
			this.next = null;
		}
		finally {
			this.scheduleLock.unlock();
		}
		if (this.inFlight || this.threads.isShutdown()) {
			// A call is out: its answer schedules the next tick. Closed: nothing renews any more.
			return;
		}
		long now = System.nanoTime();
		List<HeldLease> due = new ArrayList<>();
		try {
			for (HeldLease lease : this.leases) {
				if (lease.renew() && lease.isActive() && lease.renewDueNanos() - now <= lease.ttl().toNanos() / 6) {
					due.add(lease);
				}
			}
			if (due.isEmpty()) {
				scheduleAfter(Long.MAX_VALUE, due);
			}
			else {
				send(due);
			}
		}
		catch (RuntimeException | Error ex) {
			logger.error("Holdfast lease renewal failed unexpectedly; retrying", ex);
			scheduleAfter(now + RETRY_AFTER_BUG_NANOS, due);
		}
	}

	/** Schedules the next tick: at {@code retryAt} for the leases in {@code due} when they failed. */
	private void scheduleAfter(long retryAt, List<HeldLease> due) {
		boolean failed = retryAt != Long.MAX_VALUE;
		Set<HeldLease> retrying = failed ? new HashSet<>(due) : Set.of();
		boolean pending = failed;
		long earliest = retryAt;
		for (HeldLease lease : this.leases) {
			if (!lease.renew() || !lease.isActive() || retrying.contains(lease)) {
				continue;
			}
			if (!pending || lease.renewDueNanos() - earliest < 0) {
				earliest = lease.renewDueNanos();
				pending = true;
			}
		}
		if (pending) {
			scheduleBy(earliest);
		}
	}

	/**
	 * Sends the renewal of the due leases: from the timer where the backend renews without
	 * blocking (exclusive leases only), else on the worker, whose call takes the leases' permits
	 * only when it runs (a report queued before it, a listener, may extend one of them).
	 */
	private void send(List<HeldLease> due) {
		this.inFlight = true;
		Batch batch = new Batch(due);
		CompletableFuture<?> answer;
		try {
			if (this.renewal instanceof AsyncLeaseRenewal async && due.stream().noneMatch(HeldLease::isShared)) {
				answer = batch.take() ? async.renewAsync(batch.locks).thenAccept(batch::renewed).toCompletableFuture()
						: CompletableFuture.completedFuture(null);
			}
			else {
				answer = CompletableFuture.runAsync(() -> {
					if (batch.take()) {
						batch.renewed(renewNow(batch.sent, batch.locks));
					}
				}, this.threads.workerOrCaller());
			}
		}
		catch (Throwable ex) {
			answer = CompletableFuture.failedFuture(ex);
		}
		answer.whenCompleteAsync((done, failure) -> answered(batch, failure), (task) -> {
			try {
				this.threads.timer().execute(task);
			}
			catch (Throwable ex) {
				// The template closed: its leases were marked lost; nothing to confirm or report.
				batch.givePermitsBack();
			}
		});
	}

	/**
	 * Renews read leases with {@link SharedLocks#renewShared} and the others with
	 * {@link LeaseRenewal#renew}: one call each per tick (RWL-5), none when there is nothing to send.
	 */
	private Set<String> renewNow(List<HeldLease> leases, List<HeldLock> locks) {
		if (this.shared == null || leases.stream().noneMatch(HeldLease::isShared)) {
			return this.renewal.renew(locks);
		}
		List<HeldLock> exclusive = new ArrayList<>(locks.size());
		List<HeldLock> read = new ArrayList<>();
		for (int i = 0; i < leases.size(); i++) {
			(leases.get(i).isShared() ? read : exclusive).add(locks.get(i));
		}
		Set<String> renewed = new HashSet<>(this.shared.renewShared(read));
		if (!exclusive.isEmpty()) {
			renewed.addAll(this.renewal.renew(exclusive));
		}
		return renewed;
	}

	/**
	 * On the timer: the backend answered {@code batch} (or the call failed): confirms the leases
	 * renewed and marks the others lost, then gives their permits back, each after its lease's
	 * state is set (an extend waiting for the permit must find it); the losses are reported on the
	 * worker, one task each; schedules the next tick.
	 */
	private void answered(Batch batch, @Nullable Throwable failure) {
		this.inFlight = false;
		long next = batch.retryAt;
		List<Runnable> reports = new ArrayList<>();
		try {
			if (failure == null && batch.renewed == null && !batch.sent.isEmpty()) {
				failure = new LockBackendException("The " + this.failures.backendName() + " backend answered no renewal",
						null);
			}
			if (failure != null && batch.sent.isEmpty()) {
				// Failed before anything was sent (taking the permits): a bug, not the backend.
				logger.error("Holdfast lease renewal failed unexpectedly; retrying", failure);
				next = System.nanoTime() + RETRY_AFTER_BUG_NANOS;
			}
			else if (failure == null && batch.renewed != null) {
				for (int i = 0; i < batch.sent.size(); i++) {
					HeldLease lease = batch.sent.get(i);
					if (batch.renewed.contains(lease.key())) {
						// Confirmed with the time to live sent, whatever the lease holds now.
						lease.confirmed(batch.start, batch.locks.get(i).ttl());
					}
					else {
						lost(lease, "the backend no longer has it under this owner (expired or taken over)", reports);
					}
				}
			}
			else if (failure != null && !batch.sent.isEmpty()) {
				next = Math.min(next, failed(batch, failure, reports));
			}
		}
		catch (RuntimeException ex) {
			logger.error("Holdfast lease renewal failed unexpectedly; retrying", ex);
			next = System.nanoTime() + RETRY_AFTER_BUG_NANOS;
		}
		finally {
			// Whatever happened, the leases keep their renewals.
			batch.givePermitsBack();
			reports.forEach(this.threads::work);
			scheduleAfter(next, batch.due);
		}
	}

	/** The renewal call failed: returns when to retry the leases still valid. */
	private long failed(Batch batch, Throwable failure, List<Runnable> reports) {
		Throwable cause = (failure instanceof CompletionException && failure.getCause() != null) ? failure.getCause()
				: failure;
		// The backend's message may quote keys: logged as the template shows keys.
		RuntimeException ex = (cause instanceof RuntimeException runtime) ? runtime
				: new LockBackendException("The renewal failed: " + cause, cause);
		for (HeldLock lock : batch.locks) {
			ex = this.failures.of(ex, "renew", lock.key());
		}
		long retryAt = Long.MAX_VALUE;
		for (HeldLease lease : batch.sent) {
			if (!lease.isValid()) {
				lost(lease, "it could not be renewed before it expired: " + ex.getMessage(), reports);
			}
			else {
				retryAt = Math.min(retryAt, batch.start + Math.max(MIN_RETRY_NANOS, lease.ttl().toNanos() / 10));
			}
		}
		RuntimeException logged = ex;
		int count = batch.sent.size();
		reports.add(() -> logger.warn("Holdfast could not renew " + count + " lease(s); retrying while they are valid",
				logged));
		return retryAt;
	}

	/**
	 * Marks {@code lease} lost now, so that nothing renews it again and its holder finds it
	 * invalid (REN-4); its report (WARN, observation, listener) is left to the worker.
	 */
	private void lost(HeldLease lease, String reason, List<Runnable> reports) {
		if (lease.isActive() && lease.markLost()) {
			reports.add(() -> this.local.reportLost(lease, reason));
		}
	}

	/**
	 * One renewal call: the due leases, those whose permit it took ({@link #sent}, one
	 * {@link HeldLock} each, asking what each asks for when taken) and when it was sent.
	 */
	private static final class Batch {

		final List<HeldLease> due;

		final List<HeldLease> sent = new ArrayList<>();

		final List<HeldLock> locks = new ArrayList<>();

		long start;

		/** Long.MAX_VALUE, or soon when an extend held the permit of a due lease. */
		long retryAt = Long.MAX_VALUE;

		@Nullable Set<String> renewed;

		Batch(List<HeldLease> due) {
			this.due = due;
		}

		/**
		 * Takes the permit of each due lease whose extend is not in flight (an extend confirms it,
		 * and a renewal sent beside it could reach the backend last with the older time to live);
		 * returns whether there is any to send.
		 */
		boolean take() {
			try {
				for (HeldLease lease : this.due) {
					if (lease.timeToLiveLock().tryAcquire()) {
						this.sent.add(lease);
						this.locks.add(new HeldLock(lease.key(), lease.owner(), lease.renewalTtl()));
					}
				}
			}
			catch (RuntimeException | Error ex) {
				givePermitsBack();
				throw ex;
			}
			if (this.sent.size() < this.due.size()) {
				this.retryAt = System.nanoTime() + MIN_RETRY_NANOS;
			}
			this.start = System.nanoTime();
			return !this.sent.isEmpty();
		}

		void renewed(Set<String> keys) {
			this.renewed = keys;
		}

		/** Once: the permits taken. */
		void givePermitsBack() {
			for (HeldLease lease : this.sent) {
				lease.timeToLiveLock().release();
			}
			this.sent.clear();
		}

	}

}
