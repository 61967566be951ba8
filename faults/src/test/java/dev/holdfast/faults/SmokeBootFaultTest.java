package dev.holdfast.faults;

import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Spring Boot client in the default build: one {@link BootFaultClient} JVM on Redis runs its
 * {@code @SingleInstanceScheduled} job every second and its {@code @DistributedLock} loop, and the
 * checker sees every tick of the run window run once.
 */
@Tag("smoke")
class SmokeBootFaultTest {

	@Test
	void bootClientRunsEveryTickOnceAndItsLockedMethod() throws Exception {
		Checker.Report locks = FaultRun.named("smoke-boot-ticks").redis(false).bootClients("holdfast").clients(1)
			.afterMs(3000)
			.run(FaultSuite.reportDir());
		Checker.TickReport ticks = Checker.checkTicks(locks.name(), FaultSuite.reportDir().resolve(locks.name()),
				Duration.ofSeconds(1), Duration.ZERO);
		System.out.println(Checker.tickTable(List.of(ticks)) + Checker.table(List.of(locks)));
		assertThat(ticks.expected()).isPositive();
		assertThat(ticks.missed()).as("missed ticks").isZero();
		assertThat(ticks.duplicates()).as("duplicate ticks").isZero();
		assertThat(ticks.fenced().lostUpdates()).isZero();
		assertThat(locks.acquisitions()).isPositive();
		assertThat(locks.fenced().lostUpdates()).isZero();
	}

}
