package dev.holdfast.faults;

import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The read-write checker on hand-written histories: it must see each violation, and none where there is none. */
@Tag("smoke")
class ReadWriteCheckerTest {

	private static final long MS = 1_000_000;

	@Test
	void cleanHistoryHasNoViolation() {
		ReadWriteChecker.Report report = ReadWriteChecker.check("clean", List.of(
				event(0, 1, "WACQ w0 10"), event(5, 1, "WR w0 10 1 ok valid"), event(6, 1, "WREL w0 10 valid"),
				event(7, 2, "RACQ r0 10 99"), event(8, 3, "RACQ r1 10 99"), event(9, 2, "RD r0 10 1 10 ok valid"),
				event(9, 3, "RD r1 10 1 10 ok valid"), event(10, 2, "RREL r0 10 valid"),
				event(11, 3, "RREL r1 10 valid"), event(12, 1, "WACQ w0 11"), event(15, 1, "WR w0 11 2 ok valid"),
				event(16, 1, "WREL w0 11 valid")),
				List.of("p 10 ok", "w 10 1 ok", "r 10 ok", "r 10 ok", "p 11 ok", "w 11 2 ok"));
		assertThat(report.violations()).as(report.toString()).isFalse();
		assertThat(report.reads()).isEqualTo(2);
		assertThat(report.acceptedWrites()).isEqualTo(2);
		assertThat(report.finalValue()).isEqualTo(2);
	}

	@Test
	void staleWriteAcceptedByAnUnguardedResourceIsSeenWithTheUpdateItLost() {
		// Writer 10 read 0 and paused; writer 11 read 0 and wrote 1; writer 10 resumed and wrote 1 with
		// its old token, which a resource without the guard accepted.
		ReadWriteChecker.Report report = ReadWriteChecker.check("stale", List.of(
				event(0, 1, "WACQ w0 10"), event(2500, 2, "WACQ w0 11"), event(2510, 2, "WR w0 11 1 ok valid"),
				event(2511, 2, "WREL w0 11 valid"), event(3000, 1, "WR w0 10 1 ok lost"),
				event(3001, 1, "WREL w0 10 lost")),
				List.of("p 10 ok", "p 11 ok", "w 11 1 ok", "w 10 1 ok"));
		assertThat(report.staleAccepted()).isEqualTo(1);
		assertThat(report.lostUpdates()).isEqualTo(1);
		assertThat(report.lateWritesAccepted()).isEqualTo(1);
		// The paused writer's hold counts up to its grant only: no overlap.
		assertThat(report.overlaps()).isZero();
		assertThat(report.violations()).isTrue();
	}

	@Test
	void theGuardRefusingTheStaleWriteLeavesNoViolation() {
		ReadWriteChecker.Report report = ReadWriteChecker.check("refused", List.of(
				event(0, 1, "WACQ w0 10"), event(2500, 2, "WACQ w0 11"), event(2510, 2, "WR w0 11 1 ok valid"),
				event(2511, 2, "WREL w0 11 valid"), event(3000, 1, "WR w0 10 1 rejected lost"),
				event(3001, 1, "WREL w0 10 lost")),
				List.of("p 10 ok", "p 11 ok", "w 11 1 ok", "w 10 1 rejected"));
		assertThat(report.violations()).as(report.toString()).isFalse();
		assertThat(report.refused()).isEqualTo(1);
	}

	@Test
	void readerBesideAWriterSeesALaterWriteAndOverlapsIt() {
		// Reader 11 holds from 0 to 20; writer 12 is granted at 3 and writes at 5, the reader reads its value at 8.
		ReadWriteChecker.Report report = ReadWriteChecker.check("overlap", List.of(
				event(0, 2, "RACQ r0 11 99"), event(3, 1, "WACQ w0 12"), event(5, 1, "WR w0 12 1 ok valid"),
				event(6, 1, "WREL w0 12 valid"), event(8, 2, "RD r0 11 1 12 ok valid"),
				event(20, 2, "RREL r0 11 valid")),
				List.of("r 11 ok", "p 12 ok", "w 12 1 ok"));
		assertThat(report.readsOfLaterWrites()).isEqualTo(1);
		assertThat(report.overlaps()).isEqualTo(1);
		assertThat(report.maxOverlapMs()).isEqualTo(3.0);
		assertThat(report.staleAccepted()).isZero();
	}

	@Test
	void writeGrantedAfterAValidReadWithoutALargerTokenIsSeen() {
		ReadWriteChecker.Report report = ReadWriteChecker.check("order", List.of(
				event(0, 2, "RACQ r0 11 99"), event(2, 2, "RD r0 11 0 0 ok valid"), event(3, 2, "RREL r0 11 valid"),
				event(5, 1, "WACQ w0 11"), event(7, 1, "WR w0 11 1 ok valid"), event(8, 1, "WREL w0 11 valid"),
				event(9, 3, "WACQ w0 12"), event(10, 3, "WR w0 12 - rejected valid")),
				List.of("r 11 ok", "p 11 ok", "w 11 1 ok", "p 12 rejected"));
		assertThat(report.writesNotAboveEarlierReads()).isEqualTo(1);
		assertThat(report.refusedWhileValid()).isEqualTo(1);
		assertThat(report.overlaps()).isZero();
		assertThat(report.violations()).isTrue();
	}

	private static Checker.Event event(long ms, long pid, String line) {
		return Checker.Event.parse((ms * MS) + " " + pid + " " + line);
	}

}
