package dev.holdfast.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;

import org.assertj.core.api.SoftAssertions;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The runs of one fault matrix test class: its own unsafe control run first (the set is invalid
 * unless the checker catches the control's violations), then the runs, each checked with soft
 * assertions so that a failure still leaves the whole table, written to
 * {@code target/faults/<file>.md}.
 */
final class Matrix {

	private final String file;

	private final List<Checker.Report> reports = new ArrayList<>();

	private final List<String> notes = new ArrayList<>();

	final SoftAssertions softly = new SoftAssertions();

	Matrix(String file) {
		this.file = file;
	}

	/**
	 * The unsafe control: a holder paused for three lease times, no fencing on the plain counter.
	 * Fails at once unless the checker reports the overlap and the stale write accepted. Holders
	 * work 300 ms, so that the pause surely lands between a holder's read and its write even when
	 * SIGSTOP takes a while to stop a JVM on a loaded machine.
	 */
	void control(String name) throws Exception {
		FaultRun run = FaultRun.named(name).redis(false).workMs(300).afterMs(1500);
		Checker.Report control = run(run.fault((context) -> context.pauseHolder(Duration.ofMillis(3 * run.ttlMs()))),
				(report) -> {
				});
		assertThat(control.overlaps()).as("control run: overlapping holders must be detected").isPositive();
		assertThat(control.plain().staleAccepted()).as("control run: stale writes accepted must be detected")
			.isPositive();
	}

	Checker.Report run(FaultRun run, Consumer<Checker.Report> expectations) throws Exception {
		Checker.Report report = run.run(FaultSuite.reportDir());
		this.reports.add(report);
		System.out.println(Checker.table(List.of(report)));
		expectations.accept(report);
		return report;
	}

	/** A line under the table: what a run showed beyond the checker's columns. */
	void note(String note) {
		this.notes.add(note);
		System.out.println(note);
	}

	/** No two holders at once, tokens only grow, no update lost even on the unguarded counter. */
	void mutualExclusionHolds(Checker.Report report) {
		this.softly.assertThat(report.overlaps()).as(report.name() + ": overlapping holders").isZero();
		this.softly.assertThat(report.plain().lostUpdates()).as(report.name() + ": lost updates").isZero();
		this.softly.assertThat(report.plain().staleAccepted()).as(report.name() + ": stale writes").isZero();
		fencingHolds(report);
	}

	/** Tokens only grow, and the guarded counter accepts no stale write and loses no update. */
	void fencingHolds(Checker.Report report) {
		this.softly.assertThat(report.tokenRegressions()).as(report.name() + ": token regressions").isZero();
		this.softly.assertThat(report.fenced().staleAccepted()).as(report.name() + ": fenced stale accepted")
			.isZero();
		this.softly.assertThat(report.fenced().lostUpdates()).as(report.name() + ": fenced lost updates").isZero();
	}

	/**
	 * The longest time one client logged nothing: a call to the lock (plus the release before
	 * it and the holder's work) that did not return. Every call is bounded by the wait time plus
	 * the network timeout, so a longer silence is a hang.
	 */
	double longestSilenceMs(Checker.Report report) {
		Path dir = FaultSuite.reportDir().resolve(report.name());
		long longest = 0;
		try (Stream<Path> files = Files.list(dir)) {
			for (Path log : files.filter((f) -> f.getFileName().toString().matches("client\\d+\\.log")).toList()) {
				Map<Long, Long> last = new HashMap<>();
				for (String line : Files.readAllLines(log)) {
					Checker.Event event = Checker.Event.parse(line);
					Long previous = last.put(event.pid(), event.nanos());
					if (previous != null) {
						longest = Math.max(longest, event.nanos() - previous);
					}
				}
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		return longest / 1e6;
	}

	/** Writes the table and the notes, then fails if any expectation failed. */
	void finish() throws IOException {
		StringBuilder out = new StringBuilder(Checker.table(this.reports));
		for (String note : this.notes) {
			out.append(String.format(Locale.ROOT, "%n- %s", note));
		}
		System.out.println(out);
		Files.createDirectories(FaultSuite.reportDir());
		Files.writeString(FaultSuite.reportDir().resolve(this.file + ".md"), out.append('\n'));
		this.softly.assertAll();
	}

}
