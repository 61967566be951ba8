package dev.holdfast.faults;

import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

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

	private static Checker.Event event(long ms, long pid, String event) {
		return Checker.Event.parse((ms * MS) + " " + pid + " " + event);
	}

}
