package dev.holdfast.sample;

import java.time.Instant;

import org.springframework.stereotype.Component;

import dev.holdfast.ScheduledTick;
import dev.holdfast.SingleInstanceScheduled;

/**
 * A job that must run once per tick across all instances: each run records one row with the
 * tick's nominal fire time and the instance that ran it, so that {@code GET /runs} shows any
 * tick that ran twice. The schedule is {@code sample.job.cron} (every 2 seconds).
 */
@Component
public class TickJob {

	/** The job's name: the name of its lock, and of its rows in {@code job_run}. */
	public static final String NAME = "sample-tick";

	private final JobRuns runs;

	private final SampleProperties properties;

	public TickJob(JobRuns runs, SampleProperties properties) {
		this.runs = runs;
		this.properties = properties;
	}

	/**
	 * Records this run under its tick's nominal fire time, which every instance derives alike.
	 * Runs on one instance per tick: the others find the tick claimed and skip it.
	 */
	@SingleInstanceScheduled(name = NAME, cron = "${sample.job.cron}", lockAtMostFor = "1m")
	public void recordRun() {
		Instant tick = ScheduledTick.current()
			.orElseThrow(() -> new IllegalStateException(NAME + " must run as a cron @SingleInstanceScheduled job"));
		this.runs.record(NAME, tick, this.properties.getInstanceId());
	}

}
