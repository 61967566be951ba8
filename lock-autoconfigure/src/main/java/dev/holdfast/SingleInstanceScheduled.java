package dev.holdfast;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

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
 * <li><b>Cron jobs</b> run once per tick: every instance derives the tick's nominal fire time
 * from the cron expression, and the first to claim that tick on the backend runs it. The claim
 * is not released after the run: it expires one period after the next tick, so an instance
 * whose clock is late (by less than a period) finds the tick already claimed and skips it.</li>
 * <li><b>Every job</b> also holds the job's own lock (the lock named {@link #name()}) while it
 * runs, so two instances never run the job at the same time. That lock expires after
 * {@link #lockAtMostFor()} even if its holder hangs or dies, and is kept for at least
 * {@link #lockAtLeastFor()} after the start, also when the job fails.</li>
 * <li>A tick whose lock is held elsewhere is skipped, logged at DEBUG and counted. A job that
 * throws is logged at ERROR with its name; later ticks run as usual. When the backend cannot be
 * reached the tick is skipped with a WARN: the job never runs without the lock.</li>
 * </ul>
 * Misconfiguration (no or several triggers, a malformed cron expression or duration,
 * {@code lockAtLeastFor} longer than {@code lockAtMostFor}, a method with parameters, a job
 * name used twice) fails the application context at startup, naming the method.
 */
@Target({ ElementType.METHOD, ElementType.ANNOTATION_TYPE })
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface SingleInstanceScheduled {

	/**
	 * A cron expression as {@code @Scheduled} takes it ({@code "0 * * * * *"}, {@code @hourly}),
	 * or {@code "-"} to disable the job.
	 */
	String cron() default "";

	/** Time zone of {@link #cron()}; empty means the server's default time zone. */
	String zone() default "";

	/** Period between the starts of two runs, as a duration string. */
	String fixedRate() default "";

	/** Period between the end of a run and the start of the next, as a duration string. */
	String fixedDelay() default "";

	/** Delay before the first run of a fixed-rate or fixed-delay job, as a duration string. */
	String initialDelay() default "";

	/**
	 * The job name, unique in the cluster: the name of its lock. Defaults to
	 * {@code SimpleClassName.methodName}.
	 */
	String name() default "";

	/**
	 * Longest time the job's lock can live, even if its holder hangs or dies: the lock is taken
	 * for this long and never renewed. Set it above the longest expected run. Empty means
	 * {@code holdfast.scheduling.lock-at-most-for} (10 minutes unless configured).
	 */
	String lockAtMostFor() default "";

	/**
	 * Shortest time the job's lock is kept after the start of a run, so that instances whose
	 * clocks differ do not run a fixed-rate or fixed-delay job again right after a quick run.
	 * Empty means {@code holdfast.scheduling.lock-at-least-for} (zero unless configured).
	 */
	String lockAtLeastFor() default "";

}
