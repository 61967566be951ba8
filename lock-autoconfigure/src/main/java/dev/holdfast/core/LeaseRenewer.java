package dev.holdfast.core;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
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

/**
 * Renews every renewable lease of one template from one scheduler thread. A lease is due a
 * third of its time to live after its last confirmation; each tick renews every lease that is at
 * least half-way to due, in one {@link LeaseRenewal#renew} call, so that leases fall into step and
 * all leases of a process cost one round trip per tick.
 */
final class LeaseRenewer {

	private static final Log logger = LogFactory.getLog(LeaseRenewer.class);

	private static final long MIN_RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

	private final DefaultLockTemplate template;

	private final LeaseRenewal renewal;

	private final Set<HeldLease> leases = ConcurrentHashMap.newKeySet();

	private final ScheduledThreadPoolExecutor scheduler;

	private final ReentrantLock scheduleLock = new ReentrantLock();

	private @Nullable ScheduledFuture<?> next;

	private long nextAtNanos;

	LeaseRenewer(DefaultLockTemplate template, LeaseRenewal renewal, String backendName) {
		this.template = template;
		this.renewal = renewal;
		this.scheduler = new ScheduledThreadPoolExecutor(1, (runnable) -> {
			Thread thread = new Thread(runnable, "holdfast-renewal-" + backendName);
			thread.setDaemon(true);
			return thread;
		});
		this.scheduler.setRemoveOnCancelPolicy(true);
	}

	void add(HeldLease lease) {
		this.leases.add(lease);
		scheduleBy(lease.renewDueNanos());
	}

	void remove(HeldLease lease) {
		this.leases.remove(lease);
	}

	int size() {
		return this.leases.size();
	}

	void shutdown() {
		this.scheduler.shutdownNow();
		this.leases.clear();
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
		for (HeldLease lease : this.leases) {
			if (!lease.isActive()) {
				this.leases.remove(lease);
			}
			else if (lease.renewDueNanos() - now <= lease.ttl().toNanos() / 6) {
				due.add(lease);
			}
		}
		long retryAt = due.isEmpty() ? Long.MAX_VALUE : renew(due);
		boolean failed = retryAt != Long.MAX_VALUE;
		Set<HeldLease> retrying = failed ? new HashSet<>(due) : Set.of();
		boolean pending = failed;
		long earliest = retryAt;
		for (HeldLease lease : this.leases) {
			if (!lease.isActive() || retrying.contains(lease)) {
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

	/** Renews the due leases; returns when to retry after a failure, or Long.MAX_VALUE. */
	private long renew(List<HeldLease> due) {
		List<HeldLock> locks = new ArrayList<>(due.size());
		for (HeldLease lease : due) {
			locks.add(new HeldLock(lease.key(), lease.owner(), lease.ttl()));
		}
		long start = System.nanoTime();
		try {
			Set<String> renewed = this.renewal.renew(locks);
			for (HeldLease lease : due) {
				if (renewed.contains(lease.key())) {
					lease.confirmed(start, lease.ttl());
				}
				else if (lease.isActive()) {
					this.template.lost(lease, "the backend no longer has it under this owner (expired or taken over)");
				}
			}
			return Long.MAX_VALUE;
		}
		catch (RuntimeException ex) {
			long retryAt = Long.MAX_VALUE;
			for (HeldLease lease : due) {
				if (!lease.isValid()) {
					this.template.lost(lease, "it could not be renewed before it expired: " + ex.getMessage());
				}
				else {
					long retry = start + Math.max(MIN_RETRY_NANOS, lease.ttl().toNanos() / 10);
					retryAt = Math.min(retryAt, retry);
				}
			}
			logger.warn("Holdfast could not renew " + due.size() + " lease(s); retrying while they are valid", ex);
			return retryAt;
		}
	}

}
