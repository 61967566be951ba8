package dev.holdfast.faults;

import org.assertj.core.api.SoftAssertions;

/** The guarantees that fault runs are checked against, as soft assertions on a run's report. */
final class Guarantees {

	private Guarantees() {
	}

	/** No two holders at once, tokens only grow, no update lost even on the unguarded counter. */
	static void mutualExclusionHolds(SoftAssertions softly, Checker.Report report) {
		softly.assertThat(report.overlaps()).as(report.name() + ": overlapping holders").isZero();
		softly.assertThat(report.plain().lostUpdates()).as(report.name() + ": lost updates").isZero();
		softly.assertThat(report.plain().staleAccepted()).as(report.name() + ": stale writes").isZero();
		fencingHolds(softly, report);
	}

	/** Tokens only grow, and the guarded counter accepts no stale write and loses no update. */
	static void fencingHolds(SoftAssertions softly, Checker.Report report) {
		softly.assertThat(report.tokenRegressions()).as(report.name() + ": token regressions").isZero();
		softly.assertThat(report.fenced().staleAccepted()).as(report.name() + ": fenced stale accepted").isZero();
		softly.assertThat(report.fenced().lostUpdates()).as(report.name() + ": fenced lost updates").isZero();
	}

}
