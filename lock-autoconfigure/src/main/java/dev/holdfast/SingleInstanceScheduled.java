package dev.holdfast;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.springframework.aot.hint.annotation.Reflective;

/**
 * Schedules the annotated method like {@code @Scheduled} and runs each execution on one
 * instance of the cluster only.
 * <p>
 * Exactly one of {@link #cron()}, {@link #fixedRate()} and {@link #fixedDelay()} must be set.
 * Every attribute accepts {@code ${...}} placeholders; durations are written {@code 5s},
 * {@code PT5S} or plain milliseconds. The method takes no arguments; its return value is
 * ignored. It is scheduled on Spring's scheduling infrastructure (the application's
 * {@code TaskScheduler} if it has one), with or without {@code @EnableScheduling}. This
 * annotation is not a {@code @Scheduled}: Spring's own processor never registers the method
 * a second time.
 * <ul>
 * <li><b>Cron and fixed-rate jobs</b> run once per tick: every instance computes the same ticks
 * (the cron expression's fire times in the job's zone; {@code initialDelay + k × fixedRate} since
 * the epoch) and claims each on the backend, which accepts the claim only if the tick is due by
 * the backend's own clock, within {@code holdfast.scheduling.clock-tolerance}, and was not claimed
 * before. An instance whose clock is off by more runs no ticks until it agrees again.</li>
 * <li><b>Fixed-delay jobs</b>: the next run, on any instance, starts at least {@link #fixedDelay()}
 * after the end of the previous run on any instance (the job lock is kept that long).</li>
 * <li><b>Every job</b> also holds the job's own lock (the lock named {@link #name()}) while it
 * runs, so two instances never run the job at the same time. That lock is a lease of
 * {@link #leaseTime()}, renewed while the run lasts like a {@code @DistributedLock} method's: if
 * its instance dies, another instance can run the job after the lease time. A run holds it for
 * {@link #lockAtMostFor()} at most, even if it hangs; the lock is kept for at least
 * {@link #lockAtLeastFor()} after the start, also when the job fails.</li>
 * <li>A tick that runs elsewhere is skipped, logged at DEBUG and counted; a tick dropped on this
 * instance (job lock busy, started late, clock off, backend down) is counted with its reason and
 * logged at INFO or WARN. A job that throws is logged at ERROR with its name; later ticks run as
 * usual. When the backend cannot be reached the tick is skipped with a WARN: the job never runs
 * without the lock.</li>
 * </ul>
 * Misconfiguration (no or several triggers, a malformed cron expression or duration, a cron job
 * without a zone on a JVM whose default zone is not UTC,
 * {@code lockAtLeastFor} longer than {@code lockAtMostFor}, a method with parameters, a job
 * name used twice) fails the application context at startup, naming the method.
 */
@Reflective
@Target({ ElementType.METHOD, ElementType.ANNOTATION_TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface SingleInstanceScheduled {

	/**
	 * A cron expression as {@code @Scheduled} takes it ({@code "0 * * * * *"}, {@code @hourly}),
	 * or {@code "-"} to disable the job.
	 */
	String cron() default "";

	/**
	 * Time zone of {@link #cron()}, the same on every instance. Empty means
	 * {@code holdfast.scheduling.zone}, else UTC if that is the JVM's default zone; otherwise the
	 * application fails to start, since instances in different default zones would run different
	 * ticks.
	 */
	String zone() default "";

	/**
	 * Period between ticks, as a duration string: the ticks are {@code initialDelay + k × fixedRate}
	 * since the epoch, the same on every instance.
	 */
	String fixedRate() default "";

	/**
	 * Time from the end of a run, on any instance, to the start of the next, on any instance, as a
	 * duration string.
	 */
	String fixedDelay() default "";

	/**
	 * Delay before this instance first runs a fixed-rate or fixed-delay job, as a duration string;
	 * for fixed-rate jobs also the phase of the ticks from the epoch.
	 */
	String initialDelay() default "";

	/**
	 * The job name, unique in the cluster: the name of its lock. Defaults to
	 * {@code SimpleClassName.methodName}.
	 */
	String name() default "";

	/**
	 * The backend that keeps the job's lock and claims its ticks: the name of one of
	 * {@code holdfast.backends.<name>}, or empty for the default backend. An unknown name fails at
	 * startup.
	 */
	String backend() default "";

	/**
	 * Longest time one run holds the job's lock, even if it hangs: its renewals end then, the
	 * lock expires, the run's lease is lost (WARN, {@code LockContext} lease no longer valid) and
	 * another instance may start the job. Set it above the longest expected run. Empty means
	 * {@code holdfast.scheduling.lock-at-most-for} (10 minutes unless configured).
	 */
	String lockAtMostFor() default "";

	/**
	 * Time to live of the job's lock on the backend, renewed while the run lasts (up to
	 * {@link #lockAtMostFor()}): how long the job waits for another instance when the one running
	 * it dies. Empty means {@code holdfast.lease-time}, as for {@code @DistributedLock}; at most
	 * {@code lockAtMostFor}. On a backend that cannot renew, the lock is taken for
	 * {@code lockAtMostFor}.
	 */
	String leaseTime() default "";

	/**
	 * Shortest time the job's lock is kept after the start of a run.
	 * Empty means {@code holdfast.scheduling.lock-at-least-for} (zero unless configured).
	 */
	String lockAtLeastFor() default "";

}
