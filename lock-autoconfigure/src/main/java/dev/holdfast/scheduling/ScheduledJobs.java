package dev.holdfast.scheduling;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;

import org.jspecify.annotations.Nullable;

import org.springframework.scheduling.TaskScheduler;

import dev.holdfast.core.LockEngine;

/**
 * This instance's {@code @SingleInstanceScheduled} jobs as operators see them: what the
 * {@code locks} endpoint's {@code jobs} view starts from.
 */
public final class ScheduledJobs {

	private final SingleInstanceScheduledBeanPostProcessor scheduling;

	public ScheduledJobs(SingleInstanceScheduledBeanPostProcessor scheduling) {
		this.scheduling = scheduling;
	}

	/** The jobs scheduled on this instance, by name. */
	public List<Job> jobs() {
		return this.scheduling.jobTasks()
			.jobs()
			.entrySet()
			.stream()
			.map((entry) -> {
				JobDefinition definition = entry.getValue().definition();
				JobLocks locks = entry.getValue().locks();
				return new Job(definition.name(), definition.description(), trigger(definition), definition.zone(),
						entry.getKey().nextExecution(), definition.lockAtMostFor(), definition.lockAtLeastFor(),
						entry.getValue().trigger() != null, (locks != null) ? locks.template() : null,
						(locks != null) ? locks.backendName() : definition.backend());
			})
			.sorted(Comparator.comparing(Job::name))
			.toList();
	}

	/**
	 * Runs job {@code name} once now, on this instance, unless its job lock is held (by a run
	 * anywhere, or kept for {@code lockAtLeastFor} after one): one attempt on the job lock, made
	 * on this thread; the run goes on on the job's scheduler ({@link JobRunNow}).
	 * @param caller who asked, for the log
	 * @return whether the run started; {@link RunNow#UNKNOWN} if no job of this instance has
	 * that name
	 * @throws dev.holdfast.LockBackendException if the backend failed: the job did not run
	 */
	public RunNow runNow(String name, String caller) {
		JobTasks tasks = this.scheduling.jobTasks();
		TaskScheduler scheduler = tasks.scheduler();
		SingleInstanceJob job = tasks.jobs()
			.values()
			.stream()
			.filter((candidate) -> candidate.definition().name().equals(name))
			.findFirst()
			.orElse(null);
		return (job != null && scheduler != null) ? JobRunNow.run(job, scheduler, caller) : RunNow.UNKNOWN;
	}

	private static String trigger(JobDefinition definition) {
		if (definition.cron() != null) {
			return "cron " + definition.cron();
		}
		return (definition.fixedRate() != null) ? "fixed rate " + definition.fixedRate()
				: "fixed delay " + definition.fixedDelay();
	}

	/**
	 * One job.
	 *
	 * @param name the job name, which is its lock name
	 * @param method the method it runs
	 * @param trigger {@code cron <expression>}, {@code fixed rate <duration>} or
	 * {@code fixed delay <duration>}
	 * @param zone the zone of its cron expression (UTC for the others)
	 * @param nextTick when this instance's scheduler fires it next, if known
	 * @param lockAtMostFor the cap of one run
	 * @param lockAtLeastFor how long its lock is kept at least after the start of a run
	 * @param ticks whether its runs are ticks claimed through the backend (cron, fixed rate), not
	 * a fixed delay
	 * @param engine the engine of its backend, once bound (after the refresh)
	 * @param backend its backend's name: the default one's type, or a named backend's name
	 */
	public record Job(String name, String method, String trigger, ZoneId zone, @Nullable Instant nextTick,
			Duration lockAtMostFor, Duration lockAtLeastFor, boolean ticks, @Nullable LockEngine engine,
			String backend) {
	}

	/** The outcome of {@link #runNow}. */
	public enum RunNow {

		/** The run started on this instance. */
		STARTED,
		/** The job's lock is held: it runs somewhere, or its lock is kept after a run. */
		BUSY,
		/** This instance's scheduling is stopped (the context is closing): nothing started. */
		STOPPING,
		/** No job of this instance has that name. */
		UNKNOWN;

		/** The outcome as operators read it: {@code started}, {@code busy}, ... */
		public String tag() {
			return name().toLowerCase(Locale.ROOT);
		}

	}

}
