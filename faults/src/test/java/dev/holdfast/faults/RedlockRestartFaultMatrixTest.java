package dev.holdfast.faults;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Redlock with 5 nodes when a majority (3) crashes while a client holds the lock and comes back at
 * once without its data: what the algorithm does not survive, and the two mitigations its safety
 * needs (nodes that persist every write; nodes that stay down longer than the TTL), which must be
 * safe. Holders work 3.5 s on a 3 s lease, so they hold across the crash by renewing; the lease
 * outlives the restart (about a second, Redisson's reconnection included), so that a holder
 * whose nodes kept the lock renews it, and an overlap is a second holder while the first one's
 * lease is still valid. Table in {@code target/faults/RedlockRestartFaultMatrixTest.md}.
 */
@Tag("faults")
class RedlockRestartFaultMatrixTest {

	private static final long TTL_MS = 3000;

	private final Matrix matrix = new Matrix("RedlockRestartFaultMatrixTest");

	@Test
	void majorityRestarts() throws Exception {
		this.matrix.control("control-restart-redis-client-paused-no-fencing");

		this.matrix.run(run("redlock5-majority-restarted-empty", false).fault(restartMajority(0)), (report) -> {
			// Not guaranteed: a second client builds a quorum on the three empty nodes.
			this.matrix.softly.assertThat(report.overlaps())
				.as(report.name() + ": a second holder while the first still holds")
				.isPositive();
			this.matrix.fencingHolds(report);
		});
		this.matrix.run(run("redlock5-majority-restarted-persistent", true).fault(restartMajority(0)),
				this.matrix::mutualExclusionHolds);
		this.matrix.run(run("redlock5-majority-restarted-after-ttl", false).fault(restartMajority(TTL_MS + 1000)),
				this.matrix::mutualExclusionHolds);

		if (FakeClock.unavailable().isPresent()) {
			this.matrix.note("redlock5-majority-restarted-empty-clock-back skipped: " + FakeClock.unavailable().get());
		}
		else {
			FakeClock nodes = FakeClock.create(FaultSuite.reportDir().resolve("clocks").resolve("redlock5-restart"));
			this.matrix.run(run("redlock5-majority-restarted-empty-clock-back", false)
				.nodeEnvironment(nodes.environment())
				.fault(restartMajority(() -> nodes.jump(Duration.ofHours(-1)))), (report) -> {
					// Documented unsafe: the time floor of the token assumes node clocks never step back.
					this.matrix.softly.assertThat(report.tokenRegressions())
						.as(report.name() + ": tokens from the time floor go back with the clock")
						.isPositive();
					this.matrix.softly.assertThat(report.fenced().staleAccepted())
						.as(report.name() + ": the guard still accepts no stale write")
						.isZero();
				});
		}
		this.matrix.finish();
	}

	private static FaultRun run(String name, boolean persistent) {
		return FaultRun.named(name).redlock(5, persistent).ttlMs(TTL_MS).workMs(TTL_MS + 500);
	}

	/** Once a client has just taken the lock, kills nodes 0-2 and restarts them after {@code downMs}. */
	private static FaultRun.Fault restartMajority(long downMs) {
		return restartMajority(() -> RedisNode.sleep(downMs));
	}

	/** Once a client has just taken the lock, kills nodes 0-2, runs {@code whileDown}, restarts them. */
	private static FaultRun.Fault restartMajority(WhileDown whileDown) {
		return (context) -> {
			context.awaitNewHolder();
			List<RedisNode> majority = context.nodes().subList(0, 3);
			context.mark("FAULT kill 3 of 5 nodes");
			majority.forEach(RedisNode::kill);
			whileDown.run();
			for (RedisNode node : majority) {
				node.start();
			}
			context.mark("HEAL restart 3 of 5 nodes");
		};
	}

	@FunctionalInterface
	private interface WhileDown {

		void run() throws Exception;

	}

}
