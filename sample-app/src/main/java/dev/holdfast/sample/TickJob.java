package dev.holdfast.sample;

import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.scheduling.support.CronExpression;
import org.springframework.stereotype.Component;

import dev.holdfast.DistributedLock;
import dev.holdfast.OnLocked;

/**
 * A job that must run once per tick across all instances: each run records one row with the
 * tick's nominal fire time and the instance that ran it, so that {@code GET /runs} shows any
 * tick that ran twice.
 */
@Component
@EnableScheduling
public class TickJob {

	/** The job's name: the name of its lock, and of its rows in {@code job_run}. */
	public static final String NAME = "sample-tick";

	/** A run started this much before its nominal time still belongs to that tick. */
	private static final java.time.Duration EARLY = java.time.Duration.ofMillis(200);

	private final JobRuns runs;

	private final SampleProperties properties;

	private final CronExpression cron;

	public TickJob(JobRuns runs, SampleProperties properties, @Value("${sample.job.cron}") String cron) {
		this.runs = runs;
		this.properties = properties;
		this.cron = CronExpression.parse(cron);
	}

	@Scheduled(cron = "${sample.job.cron}")
	@DistributedLock(name = NAME, onLocked = OnLocked.SKIP)
	public void recordRun() {
		this.runs.record(NAME, nominalTick(Instant.now()), this.properties.getInstanceId());
	}

	/**
	 * The latest fire time of the cron expression at or before {@code now} (plus a little, for a
	 * scheduler that fires early): the tick this run belongs to, the same on every instance.
	 */
	Instant nominalTick(Instant now) {
		ZonedDateTime limit = now.plus(EARLY).atZone(ZoneId.systemDefault());
		ZonedDateTime from = limit.minusMinutes(1);
		ZonedDateTime latest = null;
		for (int searched = 0; latest == null && searched < 7; searched++) {
			for (ZonedDateTime next = this.cron.next(from); next != null && !next.isAfter(limit); next = this.cron
				.next(next)) {
				latest = next;
			}
			from = from.minusDays(1);
		}
		if (latest == null) {
			throw new IllegalStateException("sample.job.cron fired no tick in the last week");
		}
		return latest.toInstant();
	}

}
