package dev.holdfast.scheduling;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;

import org.jspecify.annotations.Nullable;

import org.springframework.scheduling.TaskScheduler;

import dev.holdfast.LockListener;
import dev.holdfast.LockOptions;
import dev.holdfast.core.EngineLease;
import dev.holdfast.core.LockEngine;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims;
import dev.holdfast.spi.TickClaims.TickClaim;

/**
 * What scheduled jobs use of the engine and the backend. A job's lock is a lease of the lock
 * template, taken in one attempt and renewed until {@code lockAtMostFor} (which frees the lock of
 * a hung run), which may outlive its run: {@linkplain EngineLease#forget forgotten} with a
 * time to live of {@code lockAtLeastFor} (or {@code fixedDelay}) instead of released. Ticks are
 * claimed on the backend's {@link TickClaims} when it has them, else as leases of their own.
 */
final class JobLocks {

	private final LockEngine template;

	private final LockBackend backend;

	private final LockListener listener;

	private final TaskScheduler scheduler;

	private final TickClock tickClock;

	private final Duration tolerance;

	private final String backendName;

	/**
	 * @param template the engine whose backend, keys, owner tokens and leases jobs use
	 * @param listener told of skipped ticks
	 * @param scheduler runs the jobs; its clock is the instance's, and it releases kept locks
	 * later on backends that cannot set a lock's time to live
	 * @param tolerance {@code holdfast.scheduling.clock-tolerance}
	 */
	JobLocks(LockEngine template, LockListener listener, TaskScheduler scheduler, TickClock tickClock,
			Duration tolerance) {
		this(template, template.backend().name(), listener, scheduler, tickClock, tolerance);
	}

	/**
	 * @param backendName the backend's name in messages and meters: its type, or the name of one
	 * of {@code holdfast.backends.<name>}
	 */
	JobLocks(LockEngine template, String backendName, LockListener listener, TaskScheduler scheduler,
			TickClock tickClock, Duration tolerance) {
		this.template = template;
		this.backendName = backendName;
		this.backend = template.backend();
		this.listener = listener;
		this.scheduler = scheduler;
		this.tickClock = tickClock;
		this.tolerance = tolerance;
	}

	String backendName() {
		return this.backendName;
	}

	LockListener listener() {
		return this.listener;
	}

	LockEngine template() {
		return this.template;
	}

	TickClock tickClock() {
		return this.tickClock;
	}

	/** The instance's clock: the scheduler's, which decides when ticks fire here. */
	Clock clock() {
		return this.scheduler.getClock();
	}

	/** Whether the backend decides ticks by its clock and keeps one record per job ({@link TickClaims}). */
	boolean claimsTicks() {
		return this.backend instanceof TickClaims;
	}

	/**
	 * The tolerance of the claim of a tick followed by the next one after {@code gap}:
	 * {@code holdfast.scheduling.clock-tolerance}, at most a quarter of the gap, so that a claim
	 * accepted for one tick is always nearer to it than to any other.
	 */
	Duration toleranceFor(Duration gap) {
		Duration quarter = gap.dividedBy(4);
		return (quarter.compareTo(this.tolerance) < 0) ? quarter : this.tolerance;
	}

	/**
	 * Claims {@code tick} of job {@code name} on a backend that {@link #claimsTicks()}.
	 * @throws dev.holdfast.LockBackendException if the backend failed
	 */
	TickClaim claimTick(String name, Instant tick, Duration tolerance, Duration ttl) {
		return ((TickClaims) this.backend).claimTick(this.template.keyFor(name, null), tick, tolerance, ttl);
	}

	/**
	 * One attempt to take the lock {@code name} (with {@code key}) for {@code ttl}, never renewed:
	 * a tick's claim on a backend without tick records.
	 * @return the lease, or {@code null} if another owner holds the lock
	 * @throws dev.holdfast.LockBackendException if the backend failed
	 */
	@Nullable EngineLease tryAcquire(String name, @Nullable Object key, Duration ttl) {
		return (EngineLease) this.template.acquireOrNull(name, key,
				LockOptions.defaults().waitTime(Duration.ZERO).leaseTime(ttl).renew(false));
	}

	/**
	 * One attempt to take the job lock {@code name} for a run: a lease of {@code leaseTime} (the
	 * engine's when {@code null}, at most {@code lockAtMostFor}) renewed by the engine like any
	 * lease, whose renewals end {@code lockAtMostFor} after the attempt was sent. On a backend that
	 * cannot renew, the lock is taken for {@code lockAtMostFor}.
	 * @return the lease, or {@code null} if another owner holds the lock
	 * @throws dev.holdfast.LockBackendException if the backend failed
	 */
	@Nullable EngineLease acquireJobLock(String name, @Nullable Duration leaseTime, Duration lockAtMostFor) {
		LockOptions once = LockOptions.defaults().waitTime(Duration.ZERO);
		Duration ttl = this.template.leaseTime((leaseTime != null) ? once.leaseTime(leaseTime) : once);
		if (!confirmsKeep() || ttl.compareTo(lockAtMostFor) > 0) {
			ttl = lockAtMostFor;
		}
		EngineLease lease = (EngineLease) this.template.acquireOrNull(name, null, once.leaseTime(ttl).renew(true));
		if (lease != null) {
			lease.renewAtMostFor(lockAtMostFor);
		}
		return lease;
	}

	/**
	 * Whether {@link #keepFor} asks the backend whether it still holds the lock (an owner-checked
	 * update of its time to live) rather than releasing it later from the scheduler.
	 */
	boolean confirmsKeep() {
		return this.backend instanceof LeaseRenewal;
	}

	/**
	 * Lets the lock of {@code lease} go {@code keep} from now: by setting its time to live and
	 * forgetting it where the backend can, else by releasing it later from the scheduler (or not at
	 * all when its time to live ends first). The lease is detached from the calling thread at once. Never released now: whether the lock is
	 * still this lease's, only the owner-checked update decides, even for a lease no longer valid
	 * here.
	 * @param lostIfFailed if not {@code null}, the update failing marks the lease lost for this
	 * reason (before it is forgotten: a forgotten lease can no longer be marked lost)
	 * @return {@code false} if the backend no longer held the lock for this lease (it is closed
	 * then, and marked lost), else {@code true}
	 * @throws RuntimeException if the update failed: the lease is forgotten, and the lock expires
	 * after its time to live
	 */
	boolean keepFor(EngineLease lease, Duration keep, @Nullable String lostIfFailed) {
		EngineLease.detach(lease);
		if (!confirmsKeep()) {
			Instant end = clock().instant().plus(keep);
			if (end.isBefore(lease.expiresAt())) {
				this.scheduler.schedule(lease::close, end);
			}
			else {
				// Its time to live ends first: a release after it would find nothing, and would
				// report the lease lost although no code runs under it any more.
				lease.forget();
			}
			return true;
		}
		try {
			if (lease.extend(keep)) {
				lease.forget();
				return true;
			}
			lease.close();
			return false;
		}
		catch (RuntimeException ex) {
			if (lostIfFailed != null) {
				lease.markLost(lostIfFailed);
			}
			// The lock expires after its time to live; a release now would end it before keep.
			lease.forget();
			throw ex;
		}
	}

}
