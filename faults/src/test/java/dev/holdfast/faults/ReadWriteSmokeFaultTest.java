package dev.holdfast.faults;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The read-write fault of the default build, on Redis: 2 client JVMs of 2 readers and 1 writer,
 * leases of 1 s; a writer SIGSTOPped past its lease (its write refused by the fence), a reader
 * SIGKILLed (a writer in within the lease + 1 s), then {@link ReadWriteChecker} over the run.
 * Every backend, more rounds: {@link ReadWriteFaultMatrixTest}.
 */
@Tag("smoke")
class ReadWriteSmokeFaultTest {

	@Test
	void staleWriteIsRefusedAndAKilledReaderDelaysAWriterByAtMostItsLeaseOnRedis() throws Exception {
		ReadWriteScenarios scenarios = new ReadWriteScenarios("ReadWriteSmokeFaultTest");
		try (ReadWriteRun run = ReadWriteRun.start(FaultSuite.reportDir(), "rw-smoke-redis", "redis", 1000, 2)) {
			scenarios.pauseWriter("redis", run);
			scenarios.killReader("redis", run, false);
			scenarios.check("redis", run);
		}
		scenarios.finish();
	}

}
