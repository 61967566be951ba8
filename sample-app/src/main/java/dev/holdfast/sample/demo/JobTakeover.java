package dev.holdfast.sample.demo;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

import dev.holdfast.sample.RelayPoller;
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
	 * Kills the instance of {@code candidates} that runs the job and waits for another to start it;
	 * first hands the leader group of the sample's relay to that instance (an operator's yield),
	 * and times the group's move after the kill as well.
	 * @param candidates the instances that run the job and campaign for the group, alive
	 */
	static Moves run(List<Instance> candidates, Consumer<String> say) throws InterruptedException {
		Instance holder = awaitHolder(candidates, Duration.ofSeconds(15));
		if (holder == null) {
			return new Moves(new DemoReport.Takeover(ReportJob.NAME, null, null, Duration.ZERO, LEASE, ALLOWANCE,
					false), null, null);
		}
		List<Instance> others = new ArrayList<>(candidates);
		others.remove(holder);
		for (Instance other : others) {
			if (holds(other)) {
				// a lock each JVM keeps to itself: the job runs everywhere, and a kill proves nothing
				return new Moves(new DemoReport.Takeover(ReportJob.NAME, holder.id(), other.id(), Duration.ZERO,
						LEASE, ALLOWANCE, true), null, null);
			}
		}
		DemoReport.LeaderMove yield = LeaderTakeover.handTo(holder, candidates, say);
		LeaderTakeover.Leader leader = LeaderTakeover.leader(candidates, -1);
		say.accept("Killing " + holder.id() + " (SIGKILL), which runs job '" + ReportJob.NAME + "' (lease "
				+ LEASE.toSeconds() + " s)" + ((leader != null && leader.instance() == holder)
						? " and leads group '" + RelayPoller.GROUP + "' (term " + leader.token() + ")" : "")
				+ ", and watching for other instances to take over");
		long killed = System.nanoTime();
		holder.kill();
		Instance next = null;
		Duration jobAfter = Duration.ZERO;
		LeaderTakeover.Leader nextLeader = null;
		Duration leaderAfter = Duration.ZERO;
		boolean leaderMoves = leader != null && leader.instance() == holder;
		long deadline = killed + LEASE.plus(ALLOWANCE).toNanos();
		while ((next == null || (leaderMoves && nextLeader == null)) && System.nanoTime() < deadline) {
			if (next == null && (next = holderOf(others)) != null) {
				jobAfter = Duration.ofNanos(System.nanoTime() - killed);
			}
			if (leaderMoves && nextLeader == null
					&& (nextLeader = LeaderTakeover.leader(others, leader.token())) != null) {
				leaderAfter = Duration.ofNanos(System.nanoTime() - killed);
			}
			Thread.sleep(50);
		}
		if (next == null) {
			jobAfter = Duration.ofNanos(System.nanoTime() - killed);
		}
		if (leaderMoves && nextLeader == null) {
			leaderAfter = Duration.ofNanos(System.nanoTime() - killed);
		}
		DemoReport.LeaderMove kill = (leader == null || !leaderMoves) ? null
				: new DemoReport.LeaderMove(RelayPoller.GROUP, "kill", holder.id(),
						(nextLeader != null) ? nextLeader.instance().id() : null, leaderAfter, leader.token(),
						(nextLeader != null) ? nextLeader.token() : 0, LeaderTakeover.KILL_BOUND,
						LeaderTakeover.ALLOWANCE);
		return new Moves(new DemoReport.Takeover(ReportJob.NAME, holder.id(), (next != null) ? next.id() : null,
				jobAfter, LEASE, ALLOWANCE, false), yield, kill);
	}

	/**
	 * What moved in the demo's last step.
	 * @param job the job's move after the kill
	 * @param yield the leader group's handover to the instance killed, {@code null} when it led already
	 * @param kill the group's move after the kill, {@code null} when the instance killed did not lead it
	 */
	record Moves(DemoReport.Takeover job, DemoReport.@Nullable LeaderMove yield,
			DemoReport.@Nullable LeaderMove kill) {
	}

	private static @Nullable Instance holderOf(List<Instance> instances) throws InterruptedException {
		for (Instance instance : instances) {
			if (holds(instance)) {
				return instance;
			}
		}
		return null;
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
