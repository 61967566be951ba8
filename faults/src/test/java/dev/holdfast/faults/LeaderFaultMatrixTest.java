package dev.holdfast.faults;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Leader election under faults (issue 30): three instances of a leader group, each a
 * {@link LeaderFaultClient} JVM, 2 s leases, on a persistent Redis, a ZooKeeper ensemble of three
 * (sessions of 3 s) and PostgreSQL. Per backend, in one run: the leader killed (SIGKILL) three times, paused
 * (SIGSTOP) three times, cut off from the backend twice (on ZooKeeper past its session, which
 * expires), a rolling restart (three graceful stops of the leader), the backend killed and
 * started again twice; then no two leaders over the whole run. Last, the limit: a Redis without
 * persistence restarted three times, its double leaders recorded. Table in
 * {@code target/faults/LeaderFaultMatrixTest.md}.
 */
@Tag("faults")
class LeaderFaultMatrixTest {

	private static final long LEASE_MS = 2000;

	private final LeaderScenarios scenarios = new LeaderScenarios("LeaderFaultMatrixTest");

	@Test
	void leaderFaultMatrix() throws Exception {
		for (String backend : new String[] { "redis", "zookeeper", "jdbc" }) {
			try (LeaderRun run = LeaderRun.start(FaultSuite.reportDir(), "leader-" + backend, backend, 3, LEASE_MS)) {
				for (int round = 0; round < 3; round++) {
					this.scenarios.killLeader(backend, run);
				}
				for (int round = 0; round < 3; round++) {
					this.scenarios.pauseLeader(backend, run);
				}
				if (Partition.unavailable().isEmpty()) {
					// On ZooKeeper the cut outlasts the session (3 s): the session expires.
					long holdMs = backend.equals("zookeeper") ? 6000 : 0;
					for (int round = 0; round < 2; round++) {
						this.scenarios.partitionLeader(backend, run, holdMs);
					}
				}
				else {
					this.scenarios.note(backend + " partitions not run: " + Partition.unavailable().orElseThrow());
				}
				this.scenarios.rollingRestart(backend, run);
				// Last: after a restart, followers whose pool or session still fails campaign again
				// only when it recovers (up to 5 s on PostgreSQL), which a rolling restart must not meet.
				for (int round = 0; round < 2; round++) {
					this.scenarios.restartBackend(backend, run);
				}
				this.scenarios.oneLeaderAtATime(backend, run);
			}
		}
		// Documented limit: a Redis without persistence forgets the lease at a restart.
		try (LeaderRun run = LeaderRun.start(FaultSuite.reportDir(), "leader-redis-volatile", "redis-volatile", 3,
				LEASE_MS)) {
			for (int round = 0; round < 3; round++) {
				this.scenarios.restartBackend("redis-volatile", run);
			}
			this.scenarios.doubleLeadersRecorded("redis-volatile", run);
		}
		this.scenarios.finish();
	}

}
