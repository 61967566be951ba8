package dev.holdfast.faults;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Redlock with 5 nodes when a majority (3) crashes while a client holds the lock and comes back at
 * once without its data: what the algorithm does not survive, and the two mitigations its safety
 * needs (nodes that persist every write; nodes that stay down longer than the TTL), which must be
 * safe. Holders work 1.5 s on a 1 s lease, so they hold across the crash by renewing. Table in
 * {@code target/faults/RedlockRestartFaultMatrixTest.md}.
 */
@Tag("faults")
class RedlockRestartFaultMatrixTest {

	private static final long WORK_MS = 1500;

	private final Matrix matrix = new Matrix("RedlockRestartFaultMatrixTest");

	@Test
	void majorityRestarts() throws Exception {
		this.matrix.control("control-restart-redis-client-paused-no-fencing");

		this.matrix.run(FaultRun.named("redlock5-majority-restarted-empty").redlock(5, false).workMs(WORK_MS)
			.fault(restartMajority(0)), (report) -> {
				// Not guaranteed: a second client builds a quorum on the three empty nodes.
				this.matrix.softly.assertThat(report.overlaps())
					.as(report.name() + ": a second holder while the first still holds")
					.isPositive();
				this.matrix.fencingHolds(report);
			});
		this.matrix.run(FaultRun.named("redlock5-majority-restarted-persistent").redlock(5, true).workMs(WORK_MS)
			.fault(restartMajority(0)), this.matrix::mutualExclusionHolds);
		this.matrix.run(FaultRun.named("redlock5-majority-restarted-after-3ttl").redlock(5, false).workMs(WORK_MS)
			.fault(restartMajority(3000)), this.matrix::mutualExclusionHolds);

		assumeTrue(FakeClock.unavailable().isEmpty(), () -> FakeClock.unavailable().orElseThrow());
		FakeClock nodes = FakeClock.create(FaultSuite.reportDir().resolve("clocks").resolve("redlock5-restart"));
		this.matrix.run(FaultRun.named("redlock5-majority-restarted-empty-clock-back").redlock(5, false)
			.workMs(WORK_MS)
			.nodeEnvironment(nodes.environment())
			.fault(restartMajorityOneHourBack(nodes)), (report) -> {
				// Documented unsafe: the time floor of the token assumes node clocks never step back.
				this.matrix.softly.assertThat(report.tokenRegressions())
					.as(report.name() + ": tokens from the time floor go back with the clock")
					.isPositive();
				this.matrix.softly.assertThat(report.fenced().staleAccepted())
					.as(report.name() + ": the guard still accepts no stale write")
					.isZero();
			});
		this.matrix.finish();
	}

	/** Once a client has just taken the lock, kills nodes 0-2 and restarts them after {@code downMs}. */
	private static FaultRun.Fault restartMajority(long downMs) {
		return (context) -> {
			context.awaitNewHolder();
			List<RedisNode> majority = context.nodes().subList(0, 3);
			context.mark("FAULT kill 3 of 5 nodes");
			majority.forEach(RedisNode::kill);
			RedisNode.sleep(downMs);
			for (RedisNode node : majority) {
				node.start();
			}
			context.mark("HEAL restart 3 of 5 nodes");
		};
	}

	/** As {@link #restartMajority(long)} at once, with every node's clock stepped back an hour. */
	private static FaultRun.Fault restartMajorityOneHourBack(FakeClock clock) {
		return (context) -> {
			context.awaitNewHolder();
			List<RedisNode> majority = context.nodes().subList(0, 3);
			context.mark("FAULT kill 3 of 5 nodes, node clocks -1h");
			majority.forEach(RedisNode::kill);
			try {
				clock.jump(Duration.ofHours(-1));
				for (RedisNode node : majority) {
					node.start();
				}
				context.mark("HEAL restart 3 of 5 nodes");
				RedisNode.sleep(3000);
			}
			finally {
				clock.jump(clock.offset().negated());
			}
		};
	}

}
