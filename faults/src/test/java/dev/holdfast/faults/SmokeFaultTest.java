package dev.holdfast.faults;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The smoke subset of the fault suite, in the default build: three client JVMs on one Redis, one of
 * them stopped with SIGSTOP inside its critical section for three times the lease time. This is
 * also the unsafe control run: the checker must find the overlap and the stale write on the plain
 * counter, or the run proves nothing. The fenced counter must reject every stale write.
 */
@Tag("smoke")
class SmokeFaultTest {

	@Test
	void pausedHolderOverlapsButItsStaleWritesAreFenced() throws Exception {
		FaultRun run = FaultRun.named("smoke-redis-client-paused").redis(false).ttlMs(1000)
			// 200 ms of work: with 20 ms the SIGSTOP can land after the holder already wrote, and the
			// control would miss its stale write on a loaded machine.
			.workMs(200).afterMs(1500);
		Checker.Report report = run
			.fault((context) -> context.pauseHolder(Duration.ofMillis(3 * run.ttlMs())))
			.run(FaultSuite.reportDir());
		System.out.println(Checker.table(List.of(report)));
		// Control: the checker catches the unsafe configuration (no fencing, paused holder).
		assertThat(report.overlaps()).as("overlapping holders in the control run").isPositive();
		assertThat(report.plain().staleAccepted()).as("stale writes accepted without fencing").isPositive();
		// Guarantee: fencing.
		assertThat(report.tokenRegressions()).isZero();
		assertThat(report.fenced().rejected()).as("stale writes rejected by the guard").isPositive();
		assertThat(report.fenced().staleAccepted()).isZero();
		assertThat(report.fenced().lostUpdates()).isZero();
	}

}
