package dev.holdfast.scheduling;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ConcurrentLinkedDeque;

import io.micrometer.observation.Observation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.util.ReflectionUtils;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockContext;
import dev.holdfast.core.LockListener.LockObservation;

/**
 * One {@code @SingleInstanceScheduled} method, as the task the scheduler runs. Each run:
 * <ol>
 * <li>cron jobs only: claims the tick's nominal fire time, in one attempt, until one period
 * after the next tick. A backend with {@link dev.holdfast.spi.TickClaims} records the last
 * claimed tick of the job in one entry that only moves forward; on others the claim is a lock
 * named after the job and the tick, never released, which expires by itself;</li>
 * <li>takes the job lock in one attempt, for {@code lockAtMostFor} without renewal, and lists it
 * with the lock template's held leases while the method runs;</li>
 * <li>invokes the method with the job lock's {@link JobLease} bound to {@link LockContext},
 * logging what the method throws;</li>
 * <li>releases the job lock, or keeps it until {@code lockAtLeastFor} after the start; a run that
 * ended after its lease expired is logged at WARN and counted as a lost lease.</li>
 * </ol>
 * A lock held elsewhere skips the run (DEBUG, {@code tickSkipped}): a tick claimed elsewhere, or
 * a job lock that is busy (a run in progress, or kept for {@code lockAtLeastFor}); so a claimed
 * tick that finds the job lock busy runs nowhere: runs never overlap. A backend failure skips the
 * run with a WARN. Once {@link JobRuns} is closed (the context is stopping), runs end at once,
 * before any backend call, and without a word.
 */
final class SingleInstanceJob implements Runnable {

	private static final Log logger = LogFactory.getLog(SingleInstanceJob.class);

	/** Claims of ticks this instance won, kept to delete them once expired; bounded. */
	private static final int MAX_CLAIMS = 8;

	/** Below this, lockAtLeastFor is already over: release rather than shorten. */
	private static final long MIN_KEEP_NANOS = 10_000_000L;

	private final JobDefinition definition;

	private final Object target;

	private final Method method;

	private final @Nullable TickCronTrigger trigger;

	private final JobRuns runs;

	private final ConcurrentLinkedDeque<JobLocks.Held> claims = new ConcurrentLinkedDeque<>();

	private volatile @Nullable JobLocks locks;

	private volatile Clock clock = Clock.systemUTC();

	SingleInstanceJob(JobDefinition definition, Object target, Method method, @Nullable TickCronTrigger trigger,
			JobRuns runs) {
		this.definition = definition;
		this.target = target;
		this.method = method;
		this.trigger = trigger;
		this.runs = runs;
		ReflectionUtils.makeAccessible(method);
	}

	/** Connects the job to the backend and to the clock of the scheduler that runs it. */
	void bind(JobLocks locks, Clock clock) {
		this.locks = locks;
		this.clock = clock;
	}

	JobDefinition definition() {
		return this.definition;
	}

	@Nullable TickCronTrigger trigger() {
		return this.trigger;
	}

	@Override
	public void run() {
		JobLocks locks = this.locks;
		if (locks == null) {
			throw new IllegalStateException("Job '" + this.definition.name() + "' is not bound to a backend");
		}
		// Taken even when the run ends at once, so that the trigger's fire times stay in step.
		Instant tick = (this.trigger != null) ? this.trigger.takeTick() : null;
		if (!this.runs.start()) {
			return;
		}
		try {
			run(locks, tick);
		}
		finally {
			this.runs.end();
		}
	}

	private void run(JobLocks locks, @Nullable Instant tick) {
		String name = this.definition.name();
		long startNanos = System.nanoTime();
		if (this.trigger != null) {
			if (tick == null) {
				logger.warn("Holdfast skipped a run of job '" + name + "': its scheduled fire time is unknown");
				return;
			}
			deleteExpiredClaims(locks, startNanos);
			try {
				if (!claim(locks, this.trigger, tick)) {
					skipped(locks, tick, "another instance claimed this tick, or this run started too late for it");
					return;
				}
			}
			catch (LockBackendException ex) {
				backendFailed(tick, ex);
				return;
			}
		}
		String key = locks.keyFor(name, null);
		LockObservation observation = locks.listener().acquiring(name, key, locks.backendName());
		JobLocks.Held jobLock;
		try {
			jobLock = locks.tryAcquire(name, key, this.definition.lockAtMostFor());
		}
		catch (LockBackendException ex) {
			observation.failed(ex);
			backendFailed(tick, ex);
			return;
		}
		Duration waited = Duration.ofNanos(System.nanoTime() - startNanos);
		if (jobLock == null) {
			observation.notAcquired();
			locks.listener().notAcquired(name, locks.backendName(), waited);
			skipped(locks, tick, "the job's lock is held by another run (or kept for lockAtLeastFor)");
			return;
		}
		observation.acquired(jobLock.fencingToken());
		locks.listener().acquired(name, locks.backendName(), waited);
		JobLease lease = new JobLease(locks, jobLock);
		Runnable unlist = locks.list(lease);
		try (LockContext.Scope scope = LockContext.bind(lease); Observation.Scope held = observation.openScope()) {
			if (tick != null) {
				ScheduledTick.run(tick, this::invoke);
			}
			else {
				invoke();
			}
		}
		finally {
			try {
				finish(locks, lease, observation);
			}
			finally {
				unlist.run();
			}
		}
	}

	/**
	 * Claims {@code tick} until one period after the next tick by this instance's clock: a
	 * claim that lives past the next tick is harmless, since every tick has its own claim (or
	 * the job's record of claims only moves forward), and it keeps the tick from running on
	 * instances whose clocks are late by up to half a period (with margin). A run that starts
	 * half a period after the next tick or later is too late to claim its tick and is skipped.
	 */
	private boolean claim(JobLocks locks, TickCronTrigger trigger, Instant tick) {
		Instant next = trigger.nextTick(tick);
		Duration period = (next != null) ? Duration.between(tick, next) : Duration.ofHours(1);
		Instant end = ((next != null) ? next : tick).plus(period);
		Duration ttl = Duration.between(this.clock.instant(), end);
		if (ttl.compareTo(period.dividedBy(2)) <= 0) {
			// Started half a period after the next tick or later (a stalled instance): the claims
			// of others may be gone, so the tick may have run already. Never run it this late.
			return false;
		}
		String name = this.definition.name();
		if (locks.claimsTicks()) {
			return locks.claimTick(name, tick, ttl);
		}
		JobLocks.Held claim = locks.tryAcquire(name, locks.keyFor(name, "tick-" + tick.toEpochMilli()), ttl);
		if (claim == null) {
			return false;
		}
		this.claims.addLast(claim);
		while (this.claims.size() > MAX_CLAIMS) {
			this.claims.pollFirst();
		}
		return true;
	}

	/**
	 * Releases the claims of past ticks once they expired, for backends that keep expired locks
	 * as rows (jdbc) and clean up released ones; backends with {@code TickClaims} have none.
	 */
	private void deleteExpiredClaims(JobLocks locks, long nowNanos) {
		JobLocks.Held oldest;
		while ((oldest = this.claims.peekFirst()) != null && oldest.expired(nowNanos)) {
			if (this.claims.remove(oldest)) {
				locks.release(oldest);
			}
		}
	}

	private void invoke() {
		try {
			this.method.invoke(this.target);
		}
		catch (InvocationTargetException ex) {
			Throwable cause = (ex.getCause() != null) ? ex.getCause() : ex;
			if (cause instanceof Error error) {
				throw error;
			}
			logger.error("Holdfast job '" + this.definition.name() + "' failed", cause);
		}
		catch (IllegalAccessException ex) {
			logger.error("Holdfast job '" + this.definition.name() + "' could not be invoked", ex);
		}
	}

	private void finish(JobLocks locks, JobLease lease, LockObservation observation) {
		JobLocks.Held jobLock = lease.lock();
		boolean outlived = lease.outlived();
		if (outlived) {
			logger.warn("Holdfast job '" + this.definition.name() + "' ran for "
					+ Duration.ofNanos(System.nanoTime() - jobLock.acquiredNanos()).toMillis()
					+ " ms, past the validity of its lock (lockAtMostFor " + this.definition.lockAtMostFor()
					+ "): another instance may have started it meanwhile. Raise lockAtMostFor, or call "
					+ "LockContext.requireLease().extend(...) in long runs.");
			locks.listener().leaseLost(this.definition.name(), locks.backendName());
		}
		lease.close();
		long remaining = this.definition.lockAtLeastFor().toNanos() - (System.nanoTime() - jobLock.acquiredNanos());
		if (remaining >= MIN_KEEP_NANOS) {
			locks.keepFor(jobLock, Duration.ofNanos(remaining));
		}
		else {
			locks.release(jobLock);
		}
		if (outlived) {
			observation.lost();
		}
		else {
			observation.released();
		}
		locks.listener()
			.released(this.definition.name(), locks.backendName(),
					Duration.ofNanos(System.nanoTime() - jobLock.acquiredNanos()));
	}

	private void skipped(JobLocks locks, @Nullable Instant tick, String reason) {
		if (logger.isDebugEnabled()) {
			logger.debug("Holdfast skipped " + describe(tick) + ": " + reason);
		}
		locks.listener().tickSkipped(this.definition.name(), locks.backendName());
	}

	private void backendFailed(@Nullable Instant tick, LockBackendException ex) {
		logger.warn("Holdfast skipped " + describe(tick) + " because the lock backend failed; the job did not run: "
				+ ex.getMessage());
	}

	private String describe(@Nullable Instant tick) {
		return "job '" + this.definition.name() + "'" + ((tick != null) ? " at tick " + tick : "");
	}

	@Override
	public String toString() {
		return this.definition.description();
	}

}
