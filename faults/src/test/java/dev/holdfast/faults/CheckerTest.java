package dev.holdfast.faults;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/** The checker on hand-written histories: it must see each violation, and none where there is none. */
@Tag("smoke")
class CheckerTest {

	private static final long MS = 1_000_000;

	@Test
	void cleanHistoryHasNoViolation() {
		Checker.Report report = Checker.check("clean", List.of(
				event(0, 1, "ACQ 10"), event(5, 1, "WR plain 10 1 ok"), event(5, 1, "WR fenced 10 1 ok"),
				event(6, 1, "REL 10 valid"), event(7, 2, "ACQ 11"), event(9, 2, "WR plain 11 2 ok"),
				event(9, 2, "WR fenced 11 2 ok"), event(10, 2, "REL 11 valid"), event(20, 1, "STOP"),
				event(21, 0, "FINAL plain 2"), event(21, 0, "FINAL fenced 2")));
		assertThat(report.overlaps()).isZero();
		assertThat(report.tokenRegressions()).isZero();
		assertThat(report.plain().lostUpdates()).isZero();
		assertThat(report.fenced().lostUpdates()).isZero();
		assertThat(report.plainViolations()).isFalse();
		assertThat(report.acquisitions()).isEqualTo(2);
		assertThat(report.longestGapMs()).isEqualTo(13.0);
	}

	@Test
	void pausedHolderOverlapsItsSuccessorAndLosesAnUpdate() {
		// Client 1 holds token 10, pauses; client 2 takes over with 11 and writes; client 1 then
		// writes the value it read before its pause.
		Checker.Report report = Checker.check("paused", List.of(
				event(0, 1, "ACQ 10"), event(1500, 2, "ACQ 11"), event(1510, 2, "WR plain 11 1 ok"),
				event(1510, 2, "WR fenced 11 1 ok"), event(1511, 2, "REL 11 valid"),
				event(3000, 1, "WR plain 10 1 stale"), event(3000, 1, "WR fenced 10 1 rejected"),
				event(3001, 1, "REL 10 lost"), event(3500, 0, "HEAL pause-client 1"), event(3600, 2, "ACQ 12"),
				event(3601, 2, "REL 12 valid"), event(4000, 2, "STOP"), event(4001, 0, "FINAL plain 1"),
				event(4001, 0, "FINAL fenced 1")));
		assertThat(report.overlaps()).isEqualTo(1);
		assertThat(report.maxOverlapMs()).isEqualTo(11.0);
		assertThat(report.plain().staleAccepted()).isEqualTo(1);
		assertThat(report.plain().lostUpdates()).isEqualTo(1);
		assertThat(report.fenced().rejected()).isEqualTo(1);
		assertThat(report.fenced().staleAccepted()).isZero();
		assertThat(report.fenced().lostUpdates()).isZero();
		assertThat(report.lostLeases()).isEqualTo(1);
		assertThat(report.plainViolations()).isTrue();
		assertThat(report.longestGapMs()).isEqualTo(2100.0);
		assertThat(report.recoveryMs()).isEqualTo(100.0);
	}

	@Test
	void tokenThatGoesBackIsARegression() {
		Checker.Report report = Checker.check("regression", List.of(event(0, 1, "ACQ 10"), event(1, 1, "REL 10 valid"),
				event(2, 2, "ACQ 3"), event(3, 2, "REL 3 valid")));
		assertThat(report.tokenRegressions()).isEqualTo(1);
	}

	// Tick histories: the controller stamps WINDOW start at 0 ms = epoch 100_500 ms, so that the
	// tick of epoch 101_000 fires at 500 ms on the shared clock; one-second ticks.

	@Test
	void ticksRunOnceEachHaveNoDuplicateOrMiss() {
		List<Checker.Event> history = new ArrayList<>(List.of(event(0, 0, "WINDOW start 100500"),
				event(100, 1, "READY 4200"), event(120, 2, "READY 5300"), event(3100, 0, "WINDOW end 103600"),
				event(3101, 0, "TFINAL plain 3"), event(3101, 0, "TFINAL fenced 3")));
		history.addAll(tickRun(501, 1, 101_000, 1));
		history.addAll(tickRun(1502, 2, 102_000, 2));
		history.addAll(tickRun(2501, 1, 103_000, 3));
		Checker.TickReport report = Checker.checkTicks("ticks-clean", history, 1000, 3000);
		assertThat(report.expected()).isEqualTo(2);
		assertThat(report.ran()).isEqualTo(3);
		assertThat(report.duplicates()).isZero();
		assertThat(report.missed()).isZero();
		assertThat(report.instances()).isEqualTo(2);
		assertThat(report.concurrentRuns()).isZero();
		assertThat(report.plain().lostUpdates()).isZero();
		assertThat(report.slowestStartupMs()).isEqualTo(5300);
		assertThat(report.violations()).isFalse();
	}

	@Test
	void tickRunByTwoInstancesIsADuplicateThatLosesAnUpdate() {
		// The unsafe control: both instances run tick 101_000 at once and write the same value.
		Checker.TickReport report = Checker.checkTicks("ticks-twice", List.of(event(0, 0, "WINDOW start 100500"),
				event(501, 1, "TICK 101000"), event(502, 2, "TICK 101000"), event(800, 1, "TWR plain 101000 1 ok"),
				event(800, 1, "TWR fenced 101000 1 ok"), event(801, 1, "TEND 101000 ok"),
				event(802, 2, "TWR plain 101000 1 ok"), event(802, 2, "TWR fenced 101000 1 ok"),
				event(803, 2, "TEND 101000 ok"), event(1501, 1, "TICK 102000"), event(1510, 1, "TEND 102000 ok"),
				event(2100, 0, "WINDOW end 102600"), event(2101, 0, "TFINAL plain 1"),
				event(2101, 0, "TFINAL fenced 1")), 1000, 3000);
		assertThat(report.duplicates()).isEqualTo(1);
		assertThat(report.concurrentRuns()).isEqualTo(1);
		assertThat(report.missed()).isZero();
		assertThat(report.plain().lostUpdates()).isEqualTo(1);
		assertThat(report.fenced().lostUpdates()).isEqualTo(1);
		assertThat(report.violations()).isTrue();
	}

	@Test
	void tickRunTwiceByOneInstanceIsADuplicate() {
		Checker.TickReport report = Checker.checkTicks("ticks-again", List.of(event(0, 0, "WINDOW start 100500"),
				event(501, 1, "TICK 101000"), event(510, 1, "TEND 101000 ok"), event(900, 1, "TICK 101000"),
				event(910, 1, "TEND 101000 ok"), event(1100, 0, "WINDOW end 102000")), 1000, 3000);
		assertThat(report.duplicates()).isEqualTo(1);
		assertThat(report.concurrentRuns()).isZero();
		assertThat(report.violations()).isTrue();
	}

	@Test
	void tickThatNoInstanceRanIsMissedUnlessAFaultExplainsIt() {
		// Tick 101_000 runs nowhere before any fault: missed. The holder of 102_000 is killed; 103_000
		// and 104_000 fall within the allowance of 2.5 s after the heal; 105_000 runs again.
		Checker.TickReport report = Checker.checkTicks("ticks-missed", List.of(event(0, 0, "WINDOW start 100500"),
				event(1501, 1, "TICK 102000"), event(1600, 0, "FAULT kill-client 1"),
				event(1601, 0, "HEAL kill-client 1"), event(4502, 2, "TICK 105000"), event(4510, 2, "TEND 105000 ok"),
				event(5600, 0, "WINDOW end 106100")), 1000, 2500);
		assertThat(report.expected()).isEqualTo(5);
		assertThat(report.missed()).isEqualTo(1);
		assertThat(report.missedInFaults()).isEqualTo(2);
		assertThat(report.longestMissStreak()).isEqualTo(2);
		assertThat(report.recoveryMs()).isEqualTo(2901.0);
		assertThat(report.duplicates()).isZero();
		assertThat(report.violations()).isTrue();
	}

	@Test
	void pausedTickHolderRunsAlongsideTheNextTickAndItsStaleWriteIsFenced() {
		// Instance 1 is paused inside tick 101_000; instance 2 runs 103_000 once lockAtMostFor is
		// over; instance 1 resumes and writes with the older tick.
		Checker.TickReport report = Checker.checkTicks("ticks-paused", List.of(event(0, 0, "WINDOW start 100500"),
				event(501, 1, "TICK 101000"), event(600, 0, "FAULT pause-client 1"), event(2502, 2, "TICK 103000"),
				event(2510, 2, "TWR plain 103000 1 ok"), event(2510, 2, "TWR fenced 103000 1 ok"),
				event(2511, 2, "TEND 103000 ok"), event(3600, 0, "HEAL pause-client 1"),
				event(3601, 1, "TWR plain 101000 1 stale"), event(3601, 1, "TWR fenced 101000 - rejected"),
				event(3602, 1, "TEND 101000 ok"), event(4501, 2, "TICK 105000"), event(4510, 2, "TEND 105000 ok"),
				event(5100, 0, "WINDOW end 105600"), event(5101, 0, "TFINAL plain 1"),
				event(5101, 0, "TFINAL fenced 1")), 1000, 1000);
		assertThat(report.concurrentRuns()).isEqualTo(1);
		assertThat(report.duplicates()).isZero();
		assertThat(report.missed()).isZero();
		assertThat(report.missedInFaults()).isEqualTo(2);
		assertThat(report.plain().staleAccepted()).isEqualTo(1);
		assertThat(report.plain().lostUpdates()).isEqualTo(1);
		assertThat(report.fenced().rejected()).isEqualTo(1);
		assertThat(report.fenced().lostUpdates()).isZero();
	}

	@Test
	void ticksWithoutARunWindowAreRefused() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> Checker.checkTicks("no-window", List.of(event(1, 1, "TICK 1000")), 1000, 0))
			.withMessageContaining("WINDOW start");
	}

	/** A run of the tick job that starts at {@code ms} and writes {@code value} to both counters. */
	private static List<Checker.Event> tickRun(long ms, long pid, long tick, long value) {
		return List.of(event(ms, pid, "TICK " + tick), event(ms + 9, pid, "TWR plain " + tick + " " + value + " ok"),
				event(ms + 9, pid, "TWR fenced " + tick + " " + value + " ok"), event(ms + 10, pid, "TEND " + tick + " ok"));
	}

	private static Checker.Event event(long ms, long pid, String event) {
		return Checker.Event.parse((ms * MS) + " " + pid + " " + event);
	}

}
