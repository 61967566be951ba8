package dev.holdfast.faults;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The permit fault of the default build, on Redis: a semaphore of 2 permits, leases of 2 s, one
 * holder JVM killed with SIGKILL right after a renewal; its permit back within the lease + 1 s.
 * Every backend, three rounds each: {@link PermitFaultMatrixTest}.
 */
@Tag("smoke")
class PermitSmokeFaultTest {

	@Test
	void killedHoldersPermitReturnsWithinOneLeaseOnRedis() throws Exception {
		LeaderScenarios scenarios = new LeaderScenarios("PermitSmokeFaultTest");
		try (PermitRun run = PermitRun.start(FaultSuite.reportDir(), "permit-smoke-redis", "redis", 2, 2000)) {
			PermitScenarios.killHolder(scenarios, "redis", run);
		}
		scenarios.finish();
	}

}
