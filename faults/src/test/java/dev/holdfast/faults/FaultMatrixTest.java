package dev.holdfast.faults;

import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The whole fault matrix ({@code ./mvnw -B -Pfaults verify -pl faults -am}): backend × fault,
 * three client JVMs each, one-second leases. The unsafe control run comes first and the matrix
 * is invalid unless the checker catches its violations. Every run's row is printed and written to
 * {@code target/faults/report.md}; the guarantees are asserted after all runs, so that a failure
 * still leaves the whole table.
 */
@Tag("faults")
class FaultMatrixTest {

	private static final Duration FAULT = Duration.ofSeconds(3);

	/**
	 * Work time of holders in the paused-holder runs: long enough that the SIGSTOP lands before the
	 * holder's write (with 20 ms it can land after the write was sent, and the run shows nothing).
	 */
	private static final long PAUSED_WORK_MS = 200;

	private final List<Checker.Report> reports = new ArrayList<>();

	private final SoftAssertions softly = new SoftAssertions();

	@Test
	void faultMatrix() throws Exception {
		Checker.Report control = run(FaultRun.named("control-redis-client-paused-no-fencing").redis(false)
			.workMs(PAUSED_WORK_MS)
			.fault((context) -> context.pauseHolder(FAULT)), (report) -> {
			});
		assertThat(control.overlaps()).as("control run: overlapping holders must be detected").isPositive();
		assertThat(control.plain().staleAccepted()).as("control run: stale writes accepted must be detected")
			.isPositive();

		run(FaultRun.named("redis-client-paused-fenced").redis(false)
			.workMs(PAUSED_WORK_MS)
			.fault((context) -> context.pauseHolder(FAULT)),
				this::fencingHolds);
		run(FaultRun.named("redis-backend-paused").redis(false).fault((context) -> {
			RedisNode node = context.nodes().get(0);
			context.mark("FAULT pause-backend");
			node.pause();
			RedisNode.sleep(FAULT.toMillis());
			node.resume();
			context.mark("HEAL pause-backend");
		}), this::mutualExclusionHolds);
		run(FaultRun.named("redis-restart-persistent").redis(true).workMs(1500).fault(restart(0, 1, 200)),
				this::mutualExclusionHolds);
		run(FaultRun.named("redis-restart-volatile").redis(false).workMs(1500).fault(restart(0, 1, 200)),
				this::fencingHolds);
		run(FaultRun.named("redlock5-minority-down").redlock(5, false).fault(restart(0, 2, FAULT.toMillis())),
				(report) -> {
					mutualExclusionHolds(report);
					this.softly.assertThat(report.longestGapMs())
						.as(report.name() + ": locks stay available with a quorum")
						.isLessThan(FAULT.toMillis());
				});
		run(FaultRun.named("redlock5-majority-down").redlock(5, false).fault(restart(0, 3, FAULT.toMillis())),
				(report) -> {
					mutualExclusionHolds(report);
					this.softly.assertThat(report.longestGapMs())
						.as(report.name() + ": no lock is granted without a quorum (fail closed)")
						.isGreaterThanOrEqualTo(FAULT.toMillis() - 200);
				});
		run(FaultRun.named("redlock5-client-paused-fenced").redlock(5, false).workMs(PAUSED_WORK_MS)
			.fault((context) -> context.pauseHolder(FAULT)), this::fencingHolds);

		String table = Checker.table(this.reports);
		System.out.println(table);
		Files.writeString(FaultSuite.reportDir().resolve("report.md"), table);
		this.softly.assertAll();
	}

	/** Kills nodes {@code from .. from+count-1} while a client holds the lock, restarts them after {@code downMs}. */
	private static FaultRun.Fault restart(int from, int count, long downMs) {
		return (context) -> {
			context.awaitHolder();
			List<RedisNode> nodes = context.nodes().subList(from, from + count);
			context.mark("FAULT kill " + count + " node(s)");
			nodes.forEach(RedisNode::kill);
			RedisNode.sleep(downMs);
			for (RedisNode node : nodes) {
				node.start();
			}
			context.mark("HEAL restart " + count + " node(s)");
		};
	}

	private Checker.Report run(FaultRun run, Consumer<Checker.Report> expectations) throws Exception {
		Checker.Report report = run.run(FaultSuite.reportDir());
		this.reports.add(report);
		System.out.println(Checker.table(List.of(report)));
		expectations.accept(report);
		return report;
	}

	private void mutualExclusionHolds(Checker.Report report) {
		Guarantees.mutualExclusionHolds(this.softly, report);
	}

	private void fencingHolds(Checker.Report report) {
		Guarantees.fencingHolds(this.softly, report);
	}

}
