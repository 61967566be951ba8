package dev.holdfast.faults;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Fenced writes under readers and writers (issue 31): 3 client JVMs of 2 readers and 1 writer
 * each on one lock, leases of 2 s, on Redis, PostgreSQL and a ZooKeeper ensemble of three
 * (sessions 3 s). Per backend: 2 writers and 2 readers SIGSTOPped past their lease, 3 readers
 * SIGKILLed ({@link ReadWriteScenarios}), then {@link ReadWriteChecker} over the whole run. Tables
 * in {@code target/faults/ReadWriteFaultMatrixTest.md} and {@code ...-checks.md}.
 */
@Tag("faults")
class ReadWriteFaultMatrixTest {

	private static final long LEASE_MS = 2000;

	@Test
	void fencedWritesUnderReadersAndWritersSurvivePausesAndKills() throws Exception {
		ReadWriteScenarios scenarios = new ReadWriteScenarios("ReadWriteFaultMatrixTest");
		for (String backend : new String[] { "redis", "jdbc", "zookeeper" }) {
			try (ReadWriteRun run = ReadWriteRun.start(FaultSuite.reportDir(), "rw-" + backend, backend, LEASE_MS, 3)) {
				for (int round = 0; round < 2; round++) {
					scenarios.pauseWriter(backend, run);
					scenarios.pauseReader(backend, run);
				}
				for (int round = 0; round < 3; round++) {
					scenarios.killReader(backend, run, true);
				}
				scenarios.check(backend, run);
			}
		}
		scenarios.finish();
	}

}
