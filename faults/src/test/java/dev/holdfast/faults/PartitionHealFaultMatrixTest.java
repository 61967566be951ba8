package dev.holdfast.faults;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.function.Consumer;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * How fast the lock is granted again after a silent partition of the lock server heals, against
 * a minimal owner-checked client ({@link MinimalFaultClient}) under the same faults: three client
 * processes, 1 s leases, and partitions ({@link Partition}: iptables DROP) of the whole server of
 * 1, 2 and 3 s, each struck just after a client took the lock, on Redis and on PostgreSQL.
 * Acquisitions that time out in their callers during a partition still reach the server when it
 * heals (TCP retransmits them) and take the lock for owners that gave up; Holdfast releases them
 * right behind, owner-checked. Table and per-heal recoveries in
 * {@code target/faults/PartitionHealFaultMatrixTest.md}. On Redis, mutual exclusion must hold
 * throughout; on PostgreSQL, which also holds the resource, fencing (the checker's safety columns
 * were validated by the control of {@link NetworkFaultMatrixTest}).
 */
@Tag("faults")
class PartitionHealFaultMatrixTest {

	private static final List<Duration> PARTITIONS = List.of(Duration.ofSeconds(1), Duration.ofSeconds(2),
			Duration.ofSeconds(3));

	/** How much later than the minimal client's Holdfast's slowest recovery may come. */
	private static final double RECOVERY_SLACK_MS = 1000;

	private final Matrix matrix = new Matrix("PartitionHealFaultMatrixTest");

	@Test
	void recoveryAfterPartitionsHealComparedWithAMinimalClient() throws Exception {
		assumeTrue(Partition.unavailable().isEmpty(), () -> Partition.unavailable().orElseThrow());
		Checker.Report redisMinimal = run(FaultRun.named("heal-redis-minimal").redis(false).minimalClients(),
				redisNode(), this.matrix::mutualExclusionHolds);
		Checker.Report redis = run(FaultRun.named("heal-redis-holdfast").redis(false), redisNode(),
				this.matrix::mutualExclusionHolds);
		// The database also holds the resource: a holder cut off in its write outlives its lease,
		// and only the fencing guard protects the counter then.
		Checker.Report jdbcMinimal = run(FaultRun.named("heal-jdbc-minimal").jdbc(true).minimalClients(),
				database(), this.matrix::fencingHolds);
		Checker.Report jdbc = run(FaultRun.named("heal-jdbc-holdfast").jdbc(true), database(),
				this.matrix::fencingHolds);
		recoversLikeTheMinimalClient(redis, redisMinimal);
		recoversLikeTheMinimalClient(jdbc, jdbcMinimal);
		this.matrix.finish();
	}

	private Checker.Report run(FaultRun run, Cut cut, Consumer<Checker.Report> safety) throws Exception {
		Checker.Report report = this.matrix.run(run.afterMs(4000).fault(partitions(cut)), safety);
		this.matrix.note(report.name() + ": heal -> next grant per partition (1 s, 2 s, 3 s) "
				+ recoveries(FaultSuite.reportDir().resolve(report.name())) + " ms");
		return report;
	}

	private void recoversLikeTheMinimalClient(Checker.Report holdfast, Checker.Report minimal) {
		this.matrix.softly.assertThat(holdfast.recoveryMs())
			.as(holdfast.name() + ": slowest recovery after a heal, against " + minimal.name() + "'s "
					+ Math.round(minimal.recoveryMs()) + " ms")
			.isLessThan(minimal.recoveryMs() + RECOVERY_SLACK_MS);
	}

	/** What a partition cuts off from every client. */
	@FunctionalInterface
	private interface Cut {

		Partition cut(FaultContext context) throws Exception;

	}

	private static Cut redisNode() {
		return (context) -> Partition.ports(java.net.URI.create(context.nodes().get(0).uri()).getPort());
	}

	private static Cut database() {
		return (context) -> Partition.ports(context.postgresPort());
	}

	/**
	 * One partition per entry of {@link #PARTITIONS}, each struck when a client has just taken
	 * the lock, healed in {@code finally}; the next waits until the lock was granted again and a
	 * lease has passed.
	 */
	private static FaultRun.Fault partitions(Cut cut) {
		return (context) -> {
			for (Duration duration : PARTITIONS) {
				context.awaitNewHolder();
				try (Partition partition = cut.cut(context)) {
					context.mark("FAULT " + partition + " for " + duration.toMillis() + " ms");
					RedisNode.sleep(duration.toMillis());
				}
				finally {
					context.mark("HEAL partition");
				}
				context.awaitNewHolder();
				RedisNode.sleep(1000);
			}
		};
	}

	/** Heal → next acquisition, for each heal of the run, in ms. */
	private static String recoveries(Path dir) throws Exception {
		List<Checker.Event> events = new ArrayList<>(Checker.read(dir));
		events.sort(Comparator.comparingLong(Checker.Event::nanos));
		List<Long> acquisitions = events.stream().filter((e) -> e.type().equals("ACQ")).map(Checker.Event::nanos)
			.toList();
		return events.stream()
			.filter((e) -> e.type().equals("HEAL"))
			.map((heal) -> acquisitions.stream()
				.filter((t) -> t >= heal.nanos())
				.findFirst()
				.map((t) -> String.format(Locale.ROOT, "%.0f", (t - heal.nanos()) / 1e6))
				.orElse("none"))
			.collect(Collectors.joining(", "));
	}

}
