package dev.holdfast.sample.demo;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo's verdict: each guarantee the report checks can fail.
 */
class DemoReportTests {

	private static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");

	private static final DemoReport.Load LOAD = new DemoReport.Load(100, 4, Duration.ofSeconds(2), 50, 50, 0, 0, 0, 0,
			null);

	private static final List<DemoReport.SkuStock> SOLD = List.of(new DemoReport.SkuStock("apple", 50, 0, 50));

	private static final String DEFAULT = "no profile (the embedded H2 database)";

	private static final String MEMORY = DEFAULT + ", holdfast.backend=memory";

	private static final DemoReport.Locks LOCKS = new DemoReport.Locks(100, 30, 12, 0, 3, 6, 0);

	@Test
	void allGuaranteesHeld() {
		DemoReport report = new DemoReport(3, DEFAULT, "jdbc", "jdbc", LOAD, SOLD, ticks(1, 1, 1), 0, 3, LOCKS, null);
		assertThat(report.failures()).isEmpty();
		assertThat(print(report))
			.contains("Holdfast demo report: 3 instances, no profile (the embedded H2 database), lock backend jdbc   OK")
			.contains("oversold       0   OK")
			.contains("runs per tick  1 each   OK")
			.contains("RESULT: every guarantee held");
	}

	@Test
	void jobMovedWithinTheLeaseAndTheAllowanceHolds() {
		DemoReport report = new DemoReport(3, DEFAULT, "jdbc", "jdbc", LOAD, SOLD, ticks(1, 1, 1), 0, 3, LOCKS, null)
			.withTakeover(takeover("demo-3", Duration.ofMillis(2800)));
		assertThat(report.failures()).isEmpty();
		assertThat(print(report)).contains(
				"takeover       job 'sample-report' moved from demo-2 to demo-3 2.8 s after the kill (lease 3 s)   OK");
	}

	@Test
	void jobThatNoOtherInstanceStartedInTimeFails() {
		DemoReport report = new DemoReport(3, DEFAULT, "jdbc", "jdbc", LOAD, SOLD, ticks(1, 1, 1), 0, 3, LOCKS, null)
			.withTakeover(takeover(null, Duration.ofMillis(8100)));
		assertThat(report.failures()).containsExactly(
				"no other instance started job 'sample-report' within 8.1 s after demo-2 was killed (lease 3 s)");
		assertThat(print(report)).contains("RESULT: FAILED");
		DemoReport late = report.withTakeover(takeover("demo-3", Duration.ofMillis(8500)));
		assertThat(late.failures()).containsExactly(
				"job 'sample-report' moved from demo-2 to demo-3 8.5 s after the kill (lease 3 s), later than lease + 5 s");
	}

	@Test
	void jobRunningOnTwoInstancesBeforeTheKillFails() {
		DemoReport.Takeover together = new DemoReport.Takeover("sample-report", "demo-2", "demo-3", Duration.ZERO,
				Duration.ofSeconds(3), Duration.ofSeconds(5), true);
		DemoReport report = new DemoReport(3, MEMORY, "memory", "memory", LOAD, SOLD, ticks(1, 1, 1), 0, 3, LOCKS, null)
			.withTakeover(together);
		assertThat(report.failures())
			.containsExactly("job 'sample-report' ran on demo-2 and demo-3 at once, before any kill");
	}

	@Test
	void leaderGroupMovesHoldWithinTheirBoundWithALargerToken() {
		DemoReport report = new DemoReport(3, DEFAULT, "jdbc", "jdbc", LOAD, SOLD, ticks(1, 1, 1), 0, 3, LOCKS, null)
			.withMoves(takeover("demo-3", Duration.ofMillis(2800)), leaderMove("yield", "demo-2", 400, 7, 9),
					leaderMove("kill", "demo-2", 900, 9, 12));
		assertThat(report.failures()).isEmpty();
		assertThat(print(report)).contains(
				"leader yield   group 'sample-relay' moved from demo-3 to demo-2 0.4 s after the yield (bound 1.0 s), term 7 -> 9   OK",
				"leader kill    group 'sample-relay' moved from demo-3 to demo-2 0.9 s after the kill (bound 1.0 s), "
						+ "term 9 -> 12   OK");
	}

	@Test
	void leaderGroupMoveThatIsLateHasNoLeaderOrASmallerTokenFails() {
		DemoReport report = new DemoReport(3, DEFAULT, "jdbc", "jdbc", LOAD, SOLD, ticks(1, 1, 1), 0, 3, LOCKS, null)
			.withMoves(takeover("demo-3", Duration.ofMillis(2800)), leaderMove("yield", null, 3100, 7, 0),
					leaderMove("kill", "demo-2", 900, 9, 8));
		assertThat(report.failures()).containsExactly(
				"no other instance led group 'sample-relay' within 3.1 s after the yield of demo-3 (bound 1.0 s)",
				"group 'sample-relay' moved from demo-3 to demo-2 0.9 s after the kill (bound 1.0 s), term 9 -> 8: "
						+ "the new term's token is not larger");
	}

	private static DemoReport.LeaderMove leaderMove(String cause, String to, long millis, long from, long next) {
		return new DemoReport.LeaderMove("sample-relay", cause, "demo-3", to, Duration.ofMillis(millis), from, next,
				Duration.ofSeconds(1), Duration.ofSeconds(2));
	}

	private static DemoReport.Takeover takeover(String to, Duration after) {
		return new DemoReport.Takeover("sample-report", "demo-2", to, after, Duration.ofSeconds(3),
				Duration.ofSeconds(5), false);
	}

	@Test
	void backendOtherThanTheProfilesFails() {
		// the profile was asked for, but the instances ran on the default backend
		DemoReport report = new DemoReport(3, "profile zookeeper", "zookeeper", "jdbc", LOAD, SOLD, ticks(1, 1, 1), 0,
				3, LOCKS, null);
		assertThat(report.failures()).containsExactly(
				"the instances ran on lock backend jdbc, not on zookeeper that profile zookeeper asks for");
		assertThat(print(report))
			.contains("Holdfast demo report: 3 instances, profile zookeeper, lock backend jdbc   FAILED")
			.contains("RESULT: FAILED");
	}

	@Test
	void instancesOnDifferentBackendsFail() {
		DemoReport report = new DemoReport(3, "profile redis", "redis", "redis, jdbc", LOAD, SOLD, ticks(1, 1, 1), 0,
				3, LOCKS, null);
		assertThat(report.failures()).containsExactly(
				"the instances ran on lock backend redis, jdbc, not on redis that profile redis asks for");
	}

	@Test
	void tickThatRanTwiceFails() {
		DemoReport report = new DemoReport(3, MEMORY, "memory", "memory", LOAD, SOLD, ticks(1, 2, 1), 0, 3, LOCKS, null);
		assertThat(report.failures()).singleElement().asString().contains("ran 2 times");
		assertThat(print(report)).contains("2 ticks ran 1x, 1 ticks ran 2x   FAILED").contains("RESULT: FAILED");
	}

	@Test
	void lostUpdateCountsAsOversold() {
		// 50 reservations recorded, but the stock only went down by 48
		List<DemoReport.SkuStock> lost = List.of(new DemoReport.SkuStock("apple", 50, 2, 50));
		DemoReport report = new DemoReport(3, MEMORY, "memory", "memory", LOAD, lost, ticks(1, 1, 1), 0, 3, LOCKS, null);
		assertThat(report.oversold()).isEqualTo(2);
		assertThat(report.failures()).singleElement().asString().startsWith("oversold 2 units");
	}

	@Test
	void reservationsBeyondTheStockCountAsOversold() {
		List<DemoReport.SkuStock> beyond = List.of(new DemoReport.SkuStock("apple", 50, 0, 53));
		DemoReport.Load load = new DemoReport.Load(100, 4, Duration.ofSeconds(2), 53, 47, 0, 0, 0, 0, null);
		assertThat(new DemoReport(3, MEMORY, "memory", "memory", load, beyond, ticks(1, 1, 1), 0, 3, LOCKS, null).oversold()).isEqualTo(3);
	}

	@Test
	void tooFewTicksFail() {
		DemoReport report = new DemoReport(3, DEFAULT, "jdbc", "jdbc", LOAD, SOLD, ticks(1), 0, 3, LOCKS, null);
		assertThat(report.failures()).containsExactly("observed 1 ticks of the scheduled job, expected at least 3");
	}

	@Test
	void failedRequestsFail() {
		DemoReport.Load load = new DemoReport.Load(100, 4, Duration.ofSeconds(2), 50, 49, 0, 0, 0, 1,
				"demo-2: HTTP 500");
		DemoReport report = new DemoReport(3, DEFAULT, "jdbc", "jdbc", load, SOLD, ticks(1, 1, 1), 0, 3, LOCKS, null);
		assertThat(report.failures()).containsExactly("1 requests failed; first: demo-2: HTTP 500");
	}

	@Test
	void reservationsTheClientsWereNotToldOfFail() {
		DemoReport.Load load = new DemoReport.Load(100, 4, Duration.ofSeconds(2), 49, 51, 0, 0, 0, 0, null);
		DemoReport report = new DemoReport(3, DEFAULT, "jdbc", "jdbc", load, SOLD, ticks(1, 1, 1), 0, 3, LOCKS, null);
		assertThat(report.failures()).containsExactly("clients were told of 49 reservations but 50 were recorded");
	}

	@Test
	void fencedWritesWithoutLostLeasesAreFlagged() {
		DemoReport.Load load = new DemoReport.Load(100, 4, Duration.ofSeconds(2), 50, 49, 1, 0, 0, 0, null);
		DemoReport report = new DemoReport(3, DEFAULT, "jdbc", "jdbc", load, SOLD, ticks(1, 1, 1), 0, 3, LOCKS, null);
		assertThat(print(report)).contains("fenced         1 writes rejected for a stale fencing token (0 leases lost)")
			.contains("WARNING: no lease was lost, so a later holder got a lower token");
	}

	private static List<DemoReport.Tick> ticks(int... runs) {
		List<DemoReport.Tick> ticks = new java.util.ArrayList<>();
		for (int i = 0; i < runs.length; i++) {
			List<String> instances = new java.util.ArrayList<>();
			for (int run = 1; run <= runs[i]; run++) {
				instances.add("demo-" + run);
			}
			ticks.add(new DemoReport.Tick(T0.plusSeconds(2L * i), runs[i], instances));
		}
		return ticks;
	}

	private static String print(DemoReport report) {
		ByteArrayOutputStream buffer = new ByteArrayOutputStream();
		report.print(new PrintStream(buffer, true, StandardCharsets.UTF_8));
		return buffer.toString(StandardCharsets.UTF_8);
	}

}
