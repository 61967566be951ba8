package dev.holdfast.sample;

import java.time.Duration;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.ApplicationListener;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.stereotype.Component;

import dev.holdfast.SingleInstanceScheduled;

/**
 * A long job, on for {@code sample.report.enabled=true} (the demo turns it on): each run "builds
 * a report" for {@code sample.report.duration} (10 minutes), on one instance at a time, holding
 * its job lock with a short lease ({@code sample.report.lease-time}, 3 s) that Holdfast renews
 * while the run lasts. When that instance dies, its lock expires within the lease time and
 * another instance starts the job: the demo kills the instance running it and times the takeover.
 * A run ends early when its context closes, so that a graceful stop does not wait for it.
 */
@Component
@ConditionalOnProperty(name = "sample.report.enabled", havingValue = "true")
public class ReportJob implements ApplicationListener<ContextClosedEvent> {

	/** The job's name: the name of its lock. */
	public static final String NAME = "sample-report";

	private final Duration duration;

	private volatile boolean closing;

	public ReportJob(@Value("${sample.report.duration:10m}") Duration duration) {
		this.duration = duration;
	}

	/** Builds the report: here, waits for its duration or until the context closes. */
	@SingleInstanceScheduled(name = NAME, fixedDelay = "1s", leaseTime = "${sample.report.lease-time:3s}",
			lockAtMostFor = "15m")
	public void build() throws InterruptedException {
		long end = System.nanoTime() + this.duration.toNanos();
		while (!this.closing && System.nanoTime() < end) {
			Thread.sleep(100);
		}
	}

	/** Published before the scheduler stops, which waits for runs in progress. */
	@Override
	public void onApplicationEvent(ContextClosedEvent event) {
		this.closing = true;
	}

}
