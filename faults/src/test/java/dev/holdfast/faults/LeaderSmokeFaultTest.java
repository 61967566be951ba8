package dev.holdfast.faults;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The leader faults of the default build, on Redis: three instances of a leader group in their own
 * JVMs, 2 s leases; the leader killed with SIGKILL (takeover at most the lease time plus 1 s), then
 * the next leader stopped with SIGSTOP (its validity ends before another is granted, its old
 * token's writes are rejected), and no two leaders over the run. The whole matrix, on more
 * backends and faults, is {@link LeaderFaultMatrixTest}.
 */
@Tag("smoke")
class LeaderSmokeFaultTest {

	@Test
	void killedAndPausedLeadersOnRedis() throws Exception {
		LeaderScenarios scenarios = new LeaderScenarios("LeaderSmokeFaultTest");
		try (LeaderRun run = LeaderRun.start(FaultSuite.reportDir(), "leader-smoke-redis", "redis", 3, 2000)) {
			scenarios.killLeader("redis", run);
			scenarios.pauseLeader("redis", run);
			scenarios.oneLeaderAtATime("redis", run);
		}
		scenarios.finish();
	}

}
