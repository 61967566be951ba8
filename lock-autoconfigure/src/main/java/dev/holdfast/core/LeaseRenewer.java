package dev.holdfast.core;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.SharedLocks;

/**
 * Renews every renewable lease of one template from one scheduler thread, which ends after 1 s
 * with no renewal scheduled (REN-1). A lease is due a third of its time to live after its last
 * confirmation; each tick renews every lease at least half-way to due, in one
 * {@link LeaseRenewal#renew} call: all leases of a process cost one round trip per tick.
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

	private final ScheduledThreadPoolExecutor scheduler;

	private final ReentrantLock scheduleLock = new ReentrantLock();

	private @Nullable ScheduledFuture<?> next;

	private long nextAtNanos;

	LeaseRenewer(LocalLeases local, LeaseRenewal renewal, @Nullable SharedLocks shared, Failures failures,
			Collection<HeldLease> leases) {
		this.local = local;
		this.shared = shared;
		this.failures = failures;
		this.leases = leases;
		this.renewal = renewal;
		this.scheduler = new ScheduledThreadPoolExecutor(1, (runnable) -> {
			Thread thread = new Thread(runnable, "holdfast-renewal-" + failures.backendName());
			thread.setDaemon(true);
			return thread;
		});
		this.scheduler.setRemoveOnCancelPolicy(true);
		this.scheduler.setKeepAliveTime(1, TimeUnit.SECONDS);
		this.scheduler.allowCoreThreadTimeOut(true);
	}

	/** A renewable lease was registered in the template's held leases. */
	void add(HeldLease lease) {
		scheduleBy(lease.renewDueNanos());
	}

	void shutdown() {
		this.scheduler.shutdownNow();
	}

	private void scheduleBy(long dueNanos) {
		this.scheduleLock.lock();
		try {
			if (this.scheduler.isShutdown()) {
				return;
			}
			if (this.next == null || dueNanos - this.nextAtNanos < 0) {
				if (this.next != null) {
					this.next.cancel(false);
				}
				this.nextAtNanos = dueNanos;
				long delay = Math.max(0, dueNanos - System.nanoTime());
				this.next = this.scheduler.schedule(this::tick, delay, TimeUnit.NANOSECONDS);
			}
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
		long now = System.nanoTime();
		List<HeldLease> due = new ArrayList<>();
		long retryAt = Long.MAX_VALUE;
		try {
			for (HeldLease lease : this.leases) {
				if (lease.renew() && lease.isActive() && lease.renewDueNanos() - now <= lease.ttl().toNanos() / 6) {
					due.add(lease);
				}
			}
			retryAt = due.isEmpty() ? Long.MAX_VALUE : renew(due);
		}
		catch (RuntimeException ex) {
			logger.error("Holdfast lease renewal failed unexpectedly; retrying", ex);
			retryAt = now + RETRY_AFTER_BUG_NANOS;
		}
		finally {
			// Whatever happened, the leases keep their renewals.
			scheduleAfter(retryAt, due);
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
	 * Renews the due leases; returns when to retry after a failure, or Long.MAX_VALUE. A lease
	 * whose {@code extend} is in flight is left out and retried shortly: the extend confirms it,
	 * and a renewal sent beside it could reach the backend last with the older time to live.
	 */
	private long renew(List<HeldLease> due) {
		List<HeldLease> sent = new ArrayList<>(due.size());
		List<HeldLock> locks = new ArrayList<>(due.size());
		try {
			for (HeldLease lease : due) {
				if (lease.timeToLiveLock().tryLock()) {
					sent.add(lease);
					locks.add(new HeldLock(lease.key(), lease.owner(), lease.renewalTtl()));
				}
			}
			long retryAt = (sent.size() < due.size()) ? System.nanoTime() + MIN_RETRY_NANOS : Long.MAX_VALUE;
			return sent.isEmpty() ? retryAt : Math.min(retryAt, renew(sent, locks));
		}
		finally {
			for (HeldLease lease : sent) {
				lease.timeToLiveLock().unlock();
			}
		}
	}

	/**
	 * Renews read leases with {@link SharedLocks#renewShared} and the others with
	 * {@link LeaseRenewal#renew}: one call each per tick (RWL-5), none when there is nothing to send.
	 */
	private Set<String> renewEither(List<HeldLease> leases, List<HeldLock> locks) {
		List<HeldLock> exclusive = new ArrayList<>(locks.size());
		List<HeldLock> read = new ArrayList<>();
		for (int i = 0; i < leases.size(); i++) {
			(leases.get(i).isShared() ? read : exclusive).add(locks.get(i));
		}
		if (read.isEmpty()) {
			return this.renewal.renew(exclusive);
		}
		Set<String> renewed = new HashSet<>(this.shared.renewShared(read));
		if (!exclusive.isEmpty()) {
			renewed.addAll(this.renewal.renew(exclusive));
		}
		return renewed;
	}

	/** Renews {@code locks}, one per lease in {@code leases}, whose time-to-live locks are held. */
	private long renew(List<HeldLease> leases, List<HeldLock> locks) {
		long start = System.nanoTime();
		try {
			Set<String> renewed = (this.shared != null) ? renewEither(leases, locks) : this.renewal.renew(locks);
			for (int i = 0; i < leases.size(); i++) {
				HeldLease lease = leases.get(i);
				if (renewed.contains(lease.key())) {
					// Confirmed with the time to live sent, whatever the lease holds now.
					lease.confirmed(start, locks.get(i).ttl());
				}
				else if (lease.isActive()) {
					this.local.lost(lease, "the backend no longer has it under this owner (expired or taken over)");
				}
			}
			return Long.MAX_VALUE;
		}
		catch (RuntimeException failure) {
			// The backend's message may quote keys: logged as the template shows keys.
			RuntimeException ex = failure;
			for (HeldLock lock : locks) {
				ex = this.failures.of(ex, "renew", lock.key());
			}
			long retryAt = Long.MAX_VALUE;
			for (HeldLease lease : leases) {
				if (!lease.isValid()) {
					this.local.lost(lease, "it could not be renewed before it expired: " + ex.getMessage());
				}
				else {
					long retry = start + Math.max(MIN_RETRY_NANOS, lease.ttl().toNanos() / 10);
					retryAt = Math.min(retryAt, retry);
				}
			}
			logger.warn("Holdfast could not renew " + leases.size() + " lease(s); retrying while they are valid", ex);
			return retryAt;
		}
	}

}
