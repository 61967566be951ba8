package dev.holdfast.faults;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * A semaphore holder killed while holding (issue 31): a semaphore of 2 permits, leases of 2 s, on
 * Redis, PostgreSQL and a ZooKeeper ensemble of three (sessions 3 s); per backend three rounds of
 * {@link PermitScenarios#killHolder} (its permit back within the lease + 1 s). Table in
 * {@code target/faults/PermitFaultMatrixTest.md}.
 */
@Tag("faults")
class PermitFaultMatrixTest {

	private static final long LEASE_MS = 2000;

	@Test
	void killedHoldersPermitReturnsWithinOneLease() throws Exception {
		LeaderScenarios scenarios = new LeaderScenarios("PermitFaultMatrixTest");
		for (String backend : new String[] { "redis", "jdbc", "zookeeper" }) {
			try (PermitRun run = PermitRun.start(FaultSuite.reportDir(), "permit-" + backend, backend, 2, LEASE_MS)) {
				for (int round = 0; round < 3; round++) {
					PermitScenarios.killHolder(scenarios, backend, run);
				}
			}
		}
		scenarios.finish();
	}

}
