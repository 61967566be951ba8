package dev.holdfast.scheduling;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeoutException;

import io.micrometer.observation.Observation;
import kotlin.coroutines.EmptyCoroutineContext;
import kotlinx.coroutines.BuildersKt;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.core.KotlinDetector;
import org.springframework.util.ReflectionUtils;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockContext;
import dev.holdfast.core.EngineLease;
import dev.holdfast.core.EngineThreads;
import dev.holdfast.core.ThreadBindings;
import dev.holdfast.spi.TickClaims.TickClaim;
import dev.holdfast.support.LeaseView;

/**
 * One {@code @SingleInstanceScheduled} method, as the task the scheduler runs. Each run:
 * <ol>
 * <li>cron and fixed-rate jobs: claims the tick's nominal fire time, in one attempt. A backend
 * with {@link dev.holdfast.spi.TickClaims} accepts the claim only if the tick is due by its own
 * clock, within the tolerance, and not claimed before (one record per job that only moves
 * forward); on others the claim is a lock named after the job and the tick, which expires by
 * itself one period after the next tick;</li>
 * <li>takes the job lock, a lease of the lock template, in one attempt: renewed while the run
 * lasts, up to {@code lockAtMostFor} after the attempt was sent, when it is marked lost (WARN)
 * and expires on the backend;</li>
 * <li>invokes the method with a hold of that lease bound to {@link LockContext}, logging what the
 * method throws;</li>
 * <li>releases the job lock, or keeps it on the backend until {@code lockAtLeastFor} after the
 * start (fixed-delay jobs: for {@code fixedDelay} after the end, at least), also after a run
 * whose lease is no longer valid here if the backend still holds the lock for it (an
 * owner-checked update); a run whose lock the backend no longer held, or whose backend cannot
 * tell, marks the lease lost (WARN, lost-lease counter). A run that reached
 * {@code lockAtMostFor} lost its lock then: it leaves it to expire.</li>
 * </ol>
 * A tick this instance does not run is counted with its {@link SkipReason}: DEBUG when it ran
 * elsewhere, INFO or WARN for a drop. Once {@link JobRuns} is closed (the context is stopping),
 * runs end at once, before any backend call, and without a word.
 */
final class SingleInstanceJob implements Runnable {

	private static final Log logger = LogFactory.getLog(SingleInstanceJob.class);

	/** Below this, lockAtLeastFor is already over: release rather than keep. */
	private static final Duration MIN_KEEP = Duration.ofMillis(10);

	private final JobDefinition definition;

	private final Object target;

	private final Method method;

	/** A Kotlin suspend function (JobDefinition checked that it can run). */
	private final boolean suspending;

	private final @Nullable TickTrigger trigger;

	private final JobRuns runs;

	private volatile @Nullable JobLocks locks;

	SingleInstanceJob(JobDefinition definition, Object target, Method method, @Nullable TickTrigger trigger,
			JobRuns runs) {
		this.definition = definition;
		this.target = target;
		this.method = method;
		this.suspending = KotlinDetector.isSuspendingFunction(method);
		this.trigger = trigger;
		this.runs = runs;
		ReflectionUtils.makeAccessible(method);
	}

	/** Connects the job to the engine and the backend. */
	void bind(JobLocks locks) {
		this.locks = locks;
	}

	JobDefinition definition() {
		return this.definition;
	}

	@Nullable TickTrigger trigger() {
		return this.trigger;
	}

	@Nullable JobLocks locks() {
		return this.locks;
	}

	JobRuns runs() {
		return this.runs;
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
		if (this.trigger != null) {
			if (tick == null) {
				logger.warn("Holdfast skipped a run of job '" + name + "': its scheduled fire time is unknown");
				return;
			}
			SkipReason refused;
			try {
				refused = claim(locks, this.trigger, tick);
			}
			catch (LockBackendException ex) {
				backendFailed(locks, tick, ex, "; the claim's outcome is unknown: if the backend recorded it"
						+ " before its answer was lost, the tick runs on no instance");
				return;
			}
			if (refused != null) {
				skipped(locks, tick, refused, null);
				return;
			}
		}
		long startNanos = System.nanoTime();
		EngineLease lease;
		try {
			lease = locks.acquireJobLock(name, this.definition.leaseTime(), this.definition.lockAtMostFor());
		}
		catch (LockBackendException ex) {
			backendFailed(locks, tick, ex, "");
			return;
		}
		if (lease == null) {
			// A tick that this instance claimed runs nowhere; without ticks (fixed delay) the job
			// runs, or waits out its delay, elsewhere.
			skipped(locks, tick, (tick != null) ? SkipReason.JOB_BUSY : SkipReason.RAN_ELSEWHERE,
					"the job's lock is held by another run (or kept for lockAtLeastFor)");
			return;
		}
		runHolding(locks, lease, startNanos, tick);
	}

	/**
	 * Runs the method under {@code lease}, the job lock taken by one attempt sent at
	 * {@code startNanos}, and ends the hold ({@link #finish}); the job's runs and operators' runs
	 * now ({@link JobRunNow}) alike.
	 */
	void runHolding(JobLocks locks, EngineLease lease, long startNanos, @Nullable Instant tick) {
		long runNanos = System.nanoTime();
		CompletableFuture<Void> ended = loseAtLockAtMostFor(locks.template().threads(), lease, startNanos);
		Lease view = LeaseView.of(lease);
		try (ThreadBindings.Binding scope = ThreadBindings.bind(view);
				Observation.Scope held = lease.observation().openScope()) {
			if (tick != null) {
				ThreadBindings.runAtTick(tick, this::invoke);
			}
			else {
				invoke();
			}
		}
		finally {
			view.close();
			finish(locks, lease, startNanos, runNanos, !ended.complete(null));
		}
	}

	/**
	 * Marks the run's lease lost {@code lockAtMostFor} after its acquisition was sent, unless the
	 * returned stage completes first (the run ended): the run sees its lease invalid, and a WARN
	 * names the job and the cap. Timed by the engine's timer, not by the job's scheduler, whose only
	 * thread may be the one running the job; the loss is reported on the engine's worker (it runs
	 * listeners); the timer is cancelled when the run ends.
	 */
	private CompletableFuture<Void> loseAtLockAtMostFor(EngineThreads threads, EngineLease lease, long startNanos) {
		Duration atMost = this.definition.lockAtMostFor();
		CompletableFuture<Void> ended = new CompletableFuture<>();
		long left = atMost.toNanos() - (System.nanoTime() - startNanos);
		ScheduledFuture<?> cap;
		try {
			cap = threads.schedule(() -> {
				if (ended.completeExceptionally(new TimeoutException())) {
					lease.markLost("job '" + this.definition.name() + "' has run for its lockAtMostFor (" + atMost
							+ "), the longest one run holds its lock: the lock is no longer renewed and expires, and"
							+ " another instance may start the job. Raise lockAtMostFor if runs take longer", threads::work);
				}
			}, left);
		}
		catch (RejectedExecutionException ex) {
			// The engine closed: the run's lease was marked lost and is no longer renewed.
			return ended;
		}
		ended.thenRun(() -> cap.cancel(false));
		return ended;
	}

	/**
	 * Claims {@code tick}; the backend decides with its clock if it keeps tick records.
	 * @return why the tick does not run here, or {@code null} if this instance claimed it
	 */
	private @Nullable SkipReason claim(JobLocks locks, TickTrigger trigger, Instant tick) {
		Duration gap = trigger.gapAfter(tick);
		if (!locks.claimsTicks()) {
			return claimAsLock(locks, tick, gap);
		}
		String name = this.definition.name();
		Duration tolerance = locks.toleranceFor(gap);
		// A claim is accepted only within the tolerance of its tick (at most a quarter of the gap):
		// the record needs to outlive that, not more.
		Duration ttl = gap.multipliedBy(2);
		Clock clock = locks.clock();
		Instant sent = clock.instant();
		TickClaim claim = locks.claimTick(name, tick, tolerance, ttl);
		Instant received = clock.instant();
		Duration offset = TickClock.offset(sent, claim.backendTime(), received);
		TickClock tickClock = locks.tickClock();
		tickClock.measured(offset);
		if (claim.outcome() == TickClaim.Outcome.NOT_DUE && offset.abs().compareTo(tolerance) > 0) {
			tickClock.refused(name, offset, tolerance, locks.backendName());
			return SkipReason.CLOCK_OFF;
		}
		tickClock.agreed(name, offset, locks.backendName());
		return switch (claim.outcome()) {
			case CLAIMED -> null;
			case TAKEN -> SkipReason.RAN_ELSEWHERE;
			case NO_QUORUM -> SkipReason.NO_QUORUM;
			case NOT_DUE -> {
				if (logger.isInfoEnabled()) {
					logger.info("Holdfast skipped " + describe(tick) + ": this run claimed it "
							+ Duration.between(tick, claim.backendTime()).toMillis()
							+ " ms after the tick by the " + locks.backendName()
							+ " backend's clock, beyond the tolerance of " + tolerance.toMillis()
							+ " ms (the scheduler was late: a long previous run, a pause, a loaded host)");
				}
				yield SkipReason.LATE;
			}
		};
	}

	/**
	 * Claims {@code tick} as a lock of its own, on a backend without tick records, until one
	 * period after the next tick by this instance's clock: it keeps the tick from running on
	 * instances whose clocks are late by up to a period. A run that starts half a period after
	 * the next tick or later is too late to claim its tick and is skipped.
	 */
	private @Nullable SkipReason claimAsLock(JobLocks locks, Instant tick, Duration gap) {
		Instant end = tick.plus(gap).plus(gap);
		Duration ttl = Duration.between(locks.clock().instant(), end);
		if (ttl.compareTo(gap.dividedBy(2)) <= 0) {
			if (logger.isInfoEnabled()) {
				logger.info("Holdfast skipped " + describe(tick) + ": this run started more than one and a half "
						+ "periods after its tick by this instance's clock");
			}
			return SkipReason.LATE;
		}
		EngineLease claim = locks.tryAcquire(this.definition.name(), "tick-" + tick.toEpochMilli(), ttl);
		if (claim == null) {
			return SkipReason.RAN_ELSEWHERE;
		}
		// Never released: the claim expires by itself.
		claim.forget();
		return null;
	}

	private void invoke() {
		try {
			if (this.suspending) {
				Coroutines.run(this.method, this.target);
			}
			else {
				this.method.invoke(this.target);
			}
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
		catch (InterruptedException ex) {
			// a suspend function's run, cancelled by the interrupt and ended
			Thread.currentThread().interrupt();
			logger.info("Holdfast job '" + this.definition.name() + "' was cancelled: its thread was interrupted");
		}
	}

	/**
	 * Ends the run's hold of the job lock: releases it, or keeps it for what remains of
	 * {@code lockAtLeastFor} (fixed-delay jobs: at least {@code fixedDelay} from now). A lease no
	 * longer valid here may still be this run's lock on the backend: its validity counts from
	 * before its last acquisition or renewal was sent (a renewal late on a loaded host leaves little
	 * of it) and leaves out the backend's clock-drift allowance. Its lock is then kept in the same
	 * way by the owner-checked update, which only the backend can decide: a release would end a
	 * lock still held at once, and the next run would start anywhere without the delay after this
	 * one. The lease is marked lost (WARN, lost-lease counter) unless the backend still held it for
	 * this run; also when the backend could not be asked. A run that reached {@code lockAtMostFor}
	 * lost its lease then: its lock, expired on the backend or another run's by now, is forgotten,
	 * neither kept nor released.
	 * @param startNanos when the acquisition was sent
	 * @param runNanos when the method started
	 * @param capped whether the run reached {@code lockAtMostFor}
	 */
	private void finish(JobLocks locks, EngineLease lease, long startNanos, long runNanos, boolean capped) {
		long now = System.nanoTime();
		Duration ran = Duration.ofNanos(now - startNanos);
		if (capped) {
			lease.forget();
			logger.info("Holdfast job '" + this.definition.name() + "' ended " + ran.toMillis() + " ms after its lock's"
					+ " acquisition was sent, past its lockAtMostFor (" + this.definition.lockAtMostFor()
					+ "): its lock was lost then, and is not kept after the run");
			return;
		}
		Duration keep = this.definition.lockAtLeastFor().minus(ran);
		Duration delay = this.definition.fixedDelay();
		if (delay != null && delay.compareTo(keep) > 0) {
			keep = delay;
		}
		boolean keeps = keep.compareTo(MIN_KEEP) >= 0;
		if (lease.isValid()) {
			if (keeps) {
				keep(locks, lease, keep, null);
			}
			else {
				lease.close();
			}
			return;
		}
		String overran = "job '" + this.definition.name() + "' ran for " + Duration.ofNanos(now - runNanos).toMillis()
				+ " ms (" + ran.toMillis() + " ms since its lock's acquisition was sent), past the validity of its lock"
				+ " (not renewed in time)";
		String advice = "See the warnings about its renewal; a longer leaseTime rides out longer backend outages and"
				+ " pauses of this JVM";
		if (keeps && locks.confirmsKeep()) {
			Boolean kept = keep(locks, lease, keep, overran + ", and the " + locks.backendName()
					+ " backend could not be asked whether it still held it: another instance may have started it"
					+ " meanwhile. " + advice);
			if (Boolean.TRUE.equals(kept)) {
				// Not necessarily a late renewal: on ZooKeeper, a lock past its time to live that
				// no other instance took is still there to renew.
				logger.warn("Holdfast " + overran + " here, but the " + locks.backendName()
						+ " backend still held it for this run (no other instance took it meanwhile): the lock is kept"
						+ " for " + keep.toMillis() + " ms as after any run. " + advice);
			}
			else if (kept != null) {
				logger.warn("Holdfast " + overran + ", and the " + locks.backendName()
						+ " backend no longer held it: another instance may have started it meanwhile. " + advice);
			}
			return;
		}
		lease.markLost(overran + ": another instance may have started it meanwhile. " + advice);
		if (keeps) {
			// Released later on a backend that cannot set a lock's time to live: the lock may still
			// be this run's there.
			keep(locks, lease, keep, null);
		}
		else {
			lease.close();
		}
	}

	/**
	 * Keeps the lock of {@code lease} for {@code keep} ({@link JobLocks#keepFor}).
	 * @param lostIfFailed if not {@code null}, a failed update marks the lease lost with this reason
	 * (which the engine logs at WARN) instead of logging that the lock expires by its time to live
	 * @return whether the backend still held it for this run, {@code null} if the update failed
	 * (logged; the lock expires by its time to live)
	 */
	private @Nullable Boolean keep(JobLocks locks, EngineLease lease, Duration keep, @Nullable String lostIfFailed) {
		try {
			return locks.keepFor(lease, keep, lostIfFailed);
		}
		catch (RuntimeException ex) {
			logger.warn("Holdfast could not keep the lock of job '" + this.definition.name() + "' for " + keep
					+ ((lostIfFailed != null) ? "; it was past its validity here already, and expires on the backend"
							+ " by its time to live" : "; it expires by its time to live, the lease time at most"), ex);
			return null;
		}
	}

	private void skipped(JobLocks locks, @Nullable Instant tick, SkipReason reason, @Nullable String detail) {
		if (logger.isDebugEnabled()) {
			logger.debug("Holdfast skipped " + describe(tick) + ": " + reason.tag()
					+ ((detail != null) ? ": " + detail : ""));
		}
		if (reason == SkipReason.JOB_BUSY || reason == SkipReason.NO_QUORUM) {
			logger.info("Holdfast dropped " + describe(tick) + ": " + ((reason == SkipReason.JOB_BUSY)
					? "this instance claimed it, but " + detail + "; the tick runs on no instance"
					: "claims of this tick split the " + locks.backendName()
							+ " nodes and this one won no quorum; it ran elsewhere only if another claim won one"));
		}
		locks.listener().tickSkipped(this.definition.name(), locks.backendName(), reason.tag());
	}

	private void backendFailed(JobLocks locks, @Nullable Instant tick, LockBackendException ex, String unknown) {
		logger.warn("Holdfast skipped " + describe(tick) + " because the lock backend failed; the job did not run"
				+ unknown + ": " + ex.getMessage());
		locks.listener().tickSkipped(this.definition.name(), locks.backendName(), SkipReason.BACKEND_FAILED.tag());
	}

	private String describe(@Nullable Instant tick) {
		return "job '" + this.definition.name() + "'" + ((tick != null) ? " at tick " + tick : "");
	}

	@Override
	public String toString() {
		return this.definition.description();
	}

	/**
	 * Runs a Kotlin suspend function to its end on the job's thread, in {@code runBlocking}: the
	 * body resumes on that thread after each suspension (unless it switches dispatchers itself), so
	 * {@link LockContext} finds the run's lease there, and the run, with its job lock, lasts until
	 * the body has ended. An interrupt (the scheduler shutting down) cancels the body, and
	 * {@code runBlocking} still waits for it to end before it throws. Only loaded for such
	 * functions, whose check required kotlinx-coroutines-core.
	 */
	private static final class Coroutines {

		static void run(Method method, Object target) throws InvocationTargetException, InterruptedException {
			try {
				BuildersKt.runBlocking(EmptyCoroutineContext.INSTANCE, (scope, continuation) -> {
					try {
						return method.invoke(target, continuation);
					}
					catch (InvocationTargetException ex) {
						throw new WrappedFailure(ex.getTargetException());
					}
					catch (IllegalAccessException ex) {
						throw new WrappedFailure(ex);
					}
				});
			}
			catch (WrappedFailure ex) {
				throw new InvocationTargetException(ex.getCause());
			}
			catch (InterruptedException ex) {
				throw ex;
			}
			catch (Throwable ex) {
				// thrown by the body after a suspension
				throw new InvocationTargetException(ex);
			}
		}

		/** What the body threw before its first suspension, through the coroutine machinery. */
		private static final class WrappedFailure extends RuntimeException {

			WrappedFailure(Throwable cause) {
				super(null, cause, false, false);
			}

		}

	}

}
