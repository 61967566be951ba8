package dev.holdfast.scheduling;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.Comparator;
import java.util.List;

import org.jspecify.annotations.Nullable;

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
				return new Job(definition.name(), definition.description(), trigger(definition), definition.zone(),
						entry.getKey().nextExecution(), definition.lockAtMostFor(), definition.lockAtLeastFor(),
						entry.getValue().trigger() != null);
			})
			.sorted(Comparator.comparing(Job::name))
			.toList();
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
	 */
	public record Job(String name, String method, String trigger, ZoneId zone, @Nullable Instant nextTick,
			Duration lockAtMostFor, Duration lockAtLeastFor, boolean ticks) {
	}

}
