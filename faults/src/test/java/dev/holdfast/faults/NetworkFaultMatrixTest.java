package dev.holdfast.faults;

import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Silent network partitions ({@link Partition}: iptables DROP on loopback) while clients hold and
 * wait: a single Redis cut off from every client, Redlock losing a minority and a majority of its
 * nodes, and one holder cut off from its backend while the other clients are not. Table in
 * {@code target/faults/NetworkFaultMatrixTest.md}.
 */
@Tag("faults")
class NetworkFaultMatrixTest {

	private static final Duration FAULT = Duration.ofSeconds(3);

	// FaultClient: 2 s wait time; Redis command timeout 0.5 s, Redlock node timeout 0.2 s.
	private static final long WAIT_MS = 2000;

	private final Matrix matrix = new Matrix("NetworkFaultMatrixTest");

	@Test
	void networkPartitions() throws Exception {
		assumeTrue(Partition.unavailable().isEmpty(), () -> Partition.unavailable().orElseThrow());
		this.matrix.control("control-net-redis-client-paused-no-fencing");

		this.matrix.run(partitionRun("redis-partitioned").redis(false).fault(partition("node", nodes(0, 1))),
				(report) -> {
					this.matrix.mutualExclusionHolds(report);
					failsClosed(report, FAULT);
					callsBounded(report, 500);
				});
		// Recovery after a heal waits for TCP's next retransmission, which backs off exponentially.
		this.matrix.run(partitionRun("redis-partitioned-10s").redis(false).afterMs(12_000)
			.fault(partition("node", nodes(0, 1), Duration.ofSeconds(10))), (report) -> {
				this.matrix.mutualExclusionHolds(report);
				failsClosed(report, Duration.ofSeconds(10));
				callsBounded(report, 500);
			});
		this.matrix.run(partitionRun("redis-holder-partitioned").redis(false).workMs(1500).clientsInOwnGroups()
			.fault(partition("holder", holderFromNodes())), (report) -> {
				this.matrix.fencingHolds(report);
				staysAvailable(report);
			});
		this.matrix.run(partitionRun("redlock5-minority-partitioned").redlock(5, false)
			.fault(partition("2 of 5 nodes", nodes(0, 2))), (report) -> {
				this.matrix.mutualExclusionHolds(report);
				staysAvailable(report);
				callsBounded(report, 200);
			});
		this.matrix.run(partitionRun("redlock5-majority-partitioned").redlock(5, false)
			.fault(partition("3 of 5 nodes", nodes(0, 3))), (report) -> {
				this.matrix.mutualExclusionHolds(report);
				failsClosed(report, FAULT);
				callsBounded(report, 200);
			});
		this.matrix.run(partitionRun("redlock5-holder-partitioned").redlock(5, false).workMs(1500)
			.clientsInOwnGroups()
			.fault(partition("holder", holderFromNodes())), (report) -> {
				this.matrix.fencingHolds(report);
				staysAvailable(report);
			});
		this.matrix.finish();
	}

	// Runs on long enough after the heal to see the recovery, however long it takes.
	private static FaultRun partitionRun(String name) {
		return FaultRun.named(name).afterMs(6000);
	}

	/** What a partition fault cuts, given the index of a client that has just taken the lock. */
	@FunctionalInterface
	private interface Cut {

		Partition cut(FaultContext context, int holder) throws Exception;

	}

	/** Waits for a new holder, cuts for {@link #FAULT}, heals in {@code finally}. */
	private static FaultRun.Fault partition(String what, Cut cut) {
		return partition(what, cut, FAULT);
	}

	private static FaultRun.Fault partition(String what, Cut cut, Duration duration) {
		return (context) -> {
			int holder = context.awaitNewHolder();
			try (Partition partition = cut.cut(context, holder)) {
				context.mark("FAULT " + partition);
				RedisNode.sleep(duration.toMillis());
			}
			finally {
				context.mark("HEAL partition " + what);
			}
		};
	}

	/** Nodes {@code from .. from+count-1}, cut off from every client. */
	private static Cut nodes(int from, int count) {
		return (context, holder) -> Partition.ports(ports(context.nodes().subList(from, from + count)));
	}

	/** The holder, cut off from every node; the other clients are not. */
	private static Cut holderFromNodes() {
		return (context, holder) -> Partition.client(FaultContext.clientGroup(holder), ports(context.nodes()));
	}

	private void failsClosed(Checker.Report report, Duration partition) {
		this.matrix.softly.assertThat(report.longestGapMs())
			.as(report.name() + ": no lock is granted while the backend is cut off (fail closed)")
			.isGreaterThanOrEqualTo(partition.toMillis() - 200);
	}

	private void staysAvailable(Checker.Report report) {
		this.matrix.softly.assertThat(report.longestGapMs())
			.as(report.name() + ": the clients that are not cut off keep taking the lock")
			.isLessThan(FAULT.toMillis());
	}

	// A client logs at least once per call: release (one timeout) + acquire (wait + one timeout
	// per attempt in flight) + slack for a loaded machine.
	private void callsBounded(Checker.Report report, long timeoutMs) {
		double silence = this.matrix.longestSilenceMs(report);
		long bound = WAIT_MS + 2 * timeoutMs + 1000;
		this.matrix.note(String.format(Locale.ROOT, "%s: longest silence of one client %.0f ms (bound %d ms)",
				report.name(), silence, bound));
		this.matrix.softly.assertThat(silence)
			.as(report.name() + ": every call returns within wait time + network timeout")
			.isLessThan(bound);
	}

	private static int[] ports(List<RedisNode> nodes) {
		return nodes.stream().mapToInt((node) -> URI.create(node.uri()).getPort()).toArray();
	}

}
