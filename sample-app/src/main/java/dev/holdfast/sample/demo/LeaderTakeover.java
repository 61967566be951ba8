package dev.holdfast.sample.demo;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;
import tools.jackson.databind.JsonNode;

import dev.holdfast.sample.RelayPoller;

/**
 * The demo's leadership steps on the group of {@link RelayPoller}: an operator's yield through
 * {@code POST /actuator/leaders/{group}} hands the group to the instance that runs the long job
 * (another instance must lead within a second), then the kill of that instance
 * ({@link JobTakeover}) moves the group too (another instance must lead within the lease time
 * and a second). Who leads, and the term's fencing token, are read from each instance's
 * {@code GET /actuator/leaders/{group}}; each new term must carry a larger token.
 */
final class LeaderTakeover {

	/** The bound on a handover after a yield (issue 30: at most 1 s). */
	static final Duration YIELD_BOUND = Duration.ofSeconds(1);

	/** The bound on a takeover after a kill: the lease time (the job's, 3 s) and 1 s. */
	static final Duration KILL_BOUND = JobTakeover.LEASE.plusSeconds(1);

	/** How much longer than the bounds a move may take on a loaded host. */
	static final Duration ALLOWANCE = Duration.ofSeconds(2);

	private static final String PATH = "/actuator/leaders/" + RelayPoller.GROUP;

	private LeaderTakeover() {
	}

	/** The arguments of a candidate: a leader lease as short as the job's, and the yield operation open. */
	static List<String> appArgs() {
		return List.of("--holdfast.lease-time=" + JobTakeover.LEASE.toSeconds() + "s",
				"--management.endpoint.leaders.access=unrestricted");
	}

	/** The arguments of an instance that must not lead (it serves the database to the others). */
	static List<String> nonCandidateArgs() {
		return List.of("--sample.relay.enabled=false");
	}

	/** One instance leading, with its term's token. */
	record Leader(Instance instance, long token) {
	}

	/**
	 * Makes {@code target} the leader by asking whoever else leads to yield, at most a few times
	 * (with more than two candidates a yield may go to a third).
	 * @return the first handover seen, or {@code null} when {@code target} already led
	 */
	static DemoReport.@Nullable LeaderMove handTo(Instance target, List<Instance> candidates, Consumer<String> say)
			throws InterruptedException {
		DemoReport.LeaderMove first = null;
		for (int attempt = 0; attempt < 5; attempt++) {
			Leader leader = awaitLeader(candidates, -1, Duration.ofSeconds(15));
			if (leader == null) {
				return new DemoReport.LeaderMove(RelayPoller.GROUP, "yield", null, null, Duration.ZERO, 0, 0,
						YIELD_BOUND, ALLOWANCE);
			}
			if (leader.instance() == target) {
				return first;
			}
			say.accept("Asking " + leader.instance().id() + " to yield group '" + RelayPoller.GROUP + "' (term "
					+ leader.token() + ") through POST " + PATH);
			long yielded = System.nanoTime();
			try {
				leader.instance().post(PATH);
			}
			catch (IOException | IllegalStateException ex) {
				say.accept("The yield failed: " + ex.getMessage());
				return new DemoReport.LeaderMove(RelayPoller.GROUP, "yield", leader.instance().id(), null,
						Duration.ZERO, leader.token(), 0, YIELD_BOUND, ALLOWANCE);
			}
			Leader next = awaitLeader(candidates, leader.token(), YIELD_BOUND.plus(ALLOWANCE));
			DemoReport.LeaderMove move = new DemoReport.LeaderMove(RelayPoller.GROUP, "yield",
					leader.instance().id(), (next != null) ? next.instance().id() : null,
					Duration.ofNanos(System.nanoTime() - yielded), leader.token(), (next != null) ? next.token() : 0,
					YIELD_BOUND, ALLOWANCE);
			if (first == null) {
				first = move;
			}
			if (next == null) {
				return first;
			}
		}
		return first;
	}

	/**
	 * The instance of {@code instances} that leads the group with a term whose token is above
	 * {@code after}, the first seen within {@code timeout}, polling every 50 ms; {@code null} if none.
	 */
	static @Nullable Leader awaitLeader(List<Instance> instances, long after, Duration timeout)
			throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		do {
			Leader leader = leader(instances, after);
			if (leader != null) {
				return leader;
			}
			Thread.sleep(50);
		}
		while (System.nanoTime() < deadline);
		return null;
	}

	/** The instance of {@code instances} that leads now with a token above {@code after}, or {@code null}. */
	static @Nullable Leader leader(List<Instance> instances, long after) throws InterruptedException {
		for (Instance instance : instances) {
			if (!instance.isAlive()) {
				continue;
			}
			try {
				JsonNode group = instance.get(PATH);
				if (group.path("leader").asBoolean() && group.path("fencingToken").asLong() > after) {
					return new Leader(instance, group.path("fencingToken").asLong());
				}
			}
			catch (IOException | IllegalStateException ex) {
				// not answering: not leading, as far as the demo can tell
			}
		}
		return null;
	}

}
