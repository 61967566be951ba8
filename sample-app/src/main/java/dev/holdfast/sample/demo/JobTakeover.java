package dev.holdfast.sample.demo;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import tools.jackson.databind.JsonNode;

import dev.holdfast.sample.ReportJob;

/**
 * The demo's last step: kills ({@code SIGKILL}) the instance running the long job
 * ({@link ReportJob}) and times how long another instance takes to start it. The bound is the job
 * lock's lease time: the killed instance renews it no more, it expires on the backend, and the
 * next instance whose fixed delay (1 s) comes round takes it. Who runs the job is read from each
 * instance's {@code GET /actuator/locks} (the job locks of its runs in progress), which every
 * backend serves.
 */
final class JobTakeover {

	/** The job lock's lease time in the demo. */
	static final Duration LEASE = Duration.ofSeconds(3);

	/** How much longer than the lease a takeover may take: the fixed delay, polling, a loaded host. */
	static final Duration ALLOWANCE = Duration.ofSeconds(5);

	private JobTakeover() {
	}

	/** The arguments of an instance that runs the job. */
	static List<String> appArgs() {
		return List.of("--sample.report.enabled=true", "--sample.report.lease-time=" + LEASE.toSeconds() + "s");
	}

	/**
	 * Kills the instance of {@code candidates} that runs the job and waits for another to start it.
	 * @param candidates the instances that run the job, alive
	 */
	static DemoReport.Takeover run(List<Instance> candidates, Consumer<String> say) throws InterruptedException {
		Instance holder = awaitHolder(candidates, Duration.ofSeconds(15));
		if (holder == null) {
			return new DemoReport.Takeover(ReportJob.NAME, null, null, Duration.ZERO, LEASE, ALLOWANCE, false);
		}
		List<Instance> others = new ArrayList<>(candidates);
		others.remove(holder);
		for (Instance other : others) {
			if (holds(other)) {
				// a lock each JVM keeps to itself: the job runs everywhere, and a kill proves nothing
				return new DemoReport.Takeover(ReportJob.NAME, holder.id(), other.id(), Duration.ZERO, LEASE,
						ALLOWANCE, true);
			}
		}
		say.accept("Killing " + holder.id() + " (SIGKILL), which runs job '" + ReportJob.NAME + "' (lease "
				+ LEASE.toSeconds() + " s), and watching for another instance to start it");
		long killed = System.nanoTime();
		holder.kill();
		Instance next = awaitHolder(others, LEASE.plus(ALLOWANCE));
		Duration after = Duration.ofNanos(System.nanoTime() - killed);
		return new DemoReport.Takeover(ReportJob.NAME, holder.id(), (next != null) ? next.id() : null, after, LEASE,
				ALLOWANCE, false);
	}

	/** The first instance seen running the job within {@code timeout}, polling every 100 ms. */
	private static Instance awaitHolder(List<Instance> instances, Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		do {
			for (Instance instance : instances) {
				if (holds(instance)) {
					return instance;
				}
			}
			Thread.sleep(100);
		}
		while (System.nanoTime() < deadline);
		return null;
	}

	private static boolean holds(Instance instance) throws InterruptedException {
		try {
			for (JsonNode lease : instance.get("/actuator/locks").path("leases")) {
				if (ReportJob.NAME.equals(lease.path("name").asString()) && lease.path("valid").asBoolean()) {
					return true;
				}
			}
		}
		catch (IOException | IllegalStateException ex) {
			// not answering: not running it, as far as the demo can tell
		}
		return false;
	}

}
