package dev.holdfast.faults;

import java.time.Duration;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The ZooKeeper backend under faults, on an ensemble of three separate server processes
 * ({@link ZooKeeperEnsemble}): clients in their own JVMs, each with its own Curator session (3 s),
 * lock through {@code ZooKeeperLockBackend} with 1 s leases and update the counters of a Redis
 * {@link Resource}. The nemeses of the other backends: a paused holder (with and without
 * fencing), the leader paused, killed and cut off by a partition, the quorum lost, and the wall
 * clocks of the clients and of the servers jumping. The unsafe control comes first. Table in
 * {@code target/faults/ZooKeeperFaultMatrixTest.md}.
 */
@Tag("faults")
class ZooKeeperFaultMatrixTest {

	private static final Duration FAULT = Duration.ofSeconds(3);

	private static final Duration HOUR = Duration.ofHours(1);

	private final Matrix matrix = new Matrix("ZooKeeperFaultMatrixTest");

	@Test
	void zooKeeperFaultMatrix() throws Exception {
		FaultRun control = FaultRun.named("control-zookeeper3-client-paused-no-fencing").zookeeper(3)
			.workMs(300)
			.afterMs(1500);
		Checker.Report report = this.matrix.run(
				control.fault((context) -> context.pauseHolder(Duration.ofMillis(3 * control.ttlMs()))), (r) -> {
				});
		assertThat(report.overlaps()).as("control run: overlapping holders must be detected").isPositive();
		assertThat(report.plain().staleAccepted()).as("control run: stale writes accepted must be detected")
			.isPositive();

		this.matrix.run(FaultRun.named("zookeeper3-client-paused-fenced").zookeeper(3)
			.workMs(300)
			.fault((context) -> context.pauseHolder(FAULT)), (r) -> {
				this.matrix.fencingHolds(r);
				this.matrix.softly.assertThat(r.fenced().rejected())
					.as(r.name() + ": the resumed holder's writes are rejected")
					.isPositive();
			});
		this.matrix.run(FaultRun.named("zookeeper3-leader-paused").zookeeper(3).fault(this::pauseLeader),
				this::mutualExclusionAndBoundedCalls);
		this.matrix.run(FaultRun.named("zookeeper3-leader-killed").zookeeper(3).fault(this::killLeader),
				this::mutualExclusionAndBoundedCalls);
		this.matrix.run(FaultRun.named("zookeeper3-majority-paused").zookeeper(3).fault(this::pauseMajority),
				(r) -> {
					this.mutualExclusionAndBoundedCalls(r);
					this.matrix.softly.assertThat(r.errors())
						.as(r.name() + ": without a quorum, calls fail closed")
						.isPositive();
				});
		if (Partition.unavailable().isEmpty()) {
			this.matrix.run(FaultRun.named("zookeeper3-leader-partitioned").zookeeper(3).fault(this::partitionLeader),
					this::mutualExclusionAndBoundedCalls);
		}
		else {
			this.matrix.note("zookeeper3-leader-partitioned not run: " + Partition.unavailable().orElseThrow());
		}
		if (FakeClock.unavailable().isEmpty()) {
			FakeClock clients = FakeClock.create(FaultSuite.reportDir().resolve("clocks").resolve("zk-clients"));
			this.matrix.run(FaultRun.named("zookeeper3-client-clocks-jump").zookeeper(3)
				.workMs(600)
				.clientEnvironment(clients.environment())
				.fault(clockJumps(clients)), this.matrix::mutualExclusionHolds);
			FakeClock servers = FakeClock.create(FaultSuite.reportDir().resolve("clocks").resolve("zk-servers"));
			this.matrix.run(FaultRun.named("zookeeper3-server-clocks-forward").zookeeper(3)
				.workMs(600)
				.nodeEnvironment(servers.environment())
				.fault(serverClocksForward(servers)), (r) -> {
					// Documented unsafe: a lease's time to live is judged by the ensemble's wall clock.
					this.matrix.note(r.name() + ": " + r.overlaps() + " overlapping holders after the servers' "
							+ "clocks jumped an hour forward (lease expiry is judged by the ensemble's wall clock)");
					this.matrix.fencingHolds(r);
				});
		}
		else {
			this.matrix.note("clock runs not run: " + FakeClock.unavailable().orElseThrow());
		}
		this.matrix.finish();
	}

	private void mutualExclusionAndBoundedCalls(Checker.Report report) {
		this.matrix.mutualExclusionHolds(report);
		double silence = this.matrix.longestSilenceMs(report);
		this.matrix.note(report.name() + ": longest silence of a client " + Math.round(silence) + " ms");
		// wait time 2 s, connection timeout 1 s, Curator's retries, a 600 ms hold
		this.matrix.softly.assertThat(silence).as(report.name() + ": longest silence of a client, ms")
			.isLessThan(8000);
	}

	/** SIGSTOP on the leader for {@link #FAULT} while a client holds the lock. */
	private void pauseLeader(FaultContext context) throws Exception {
		ZooKeeperEnsemble ensemble = context.zooKeeper();
		int leader = ensemble.leader();
		context.awaitNewHolder();
		context.mark("FAULT pause-leader " + leader);
		ensemble.pause(leader);
		try {
			RedisNode.sleep(FAULT.toMillis());
		}
		finally {
			ensemble.resume(leader);
			context.mark("HEAL resume-leader " + leader);
		}
	}

	/** SIGKILL on the leader while a client holds the lock; restarted on its data after {@link #FAULT}. */
	private void killLeader(FaultContext context) throws Exception {
		ZooKeeperEnsemble ensemble = context.zooKeeper();
		int leader = ensemble.leader();
		context.awaitNewHolder();
		context.mark("FAULT kill-leader " + leader);
		ensemble.kill(leader);
		try {
			RedisNode.sleep(FAULT.toMillis());
		}
		finally {
			ensemble.restart(leader);
			context.mark("HEAL restart-leader " + leader);
		}
	}

	/** SIGSTOP on the leader and one follower (no quorum) for {@link #FAULT}. */
	private void pauseMajority(FaultContext context) throws Exception {
		ZooKeeperEnsemble ensemble = context.zooKeeper();
		int leader = ensemble.leader();
		int follower = (leader + 1) % ensemble.size();
		context.awaitNewHolder();
		context.mark("FAULT pause-majority " + leader + "," + follower);
		ensemble.pause(leader);
		ensemble.pause(follower);
		try {
			RedisNode.sleep(FAULT.toMillis());
		}
		finally {
			ensemble.resume(follower);
			ensemble.resume(leader);
			context.mark("HEAL resume-majority");
		}
	}

	/** Drops every packet to and from the leader's ports (clients and peers) for {@link #FAULT}. */
	private void partitionLeader(FaultContext context) throws Exception {
		ZooKeeperEnsemble ensemble = context.zooKeeper();
		int leader = ensemble.leader();
		context.awaitNewHolder();
		try (Partition partition = Partition.ports(ensemble.ports(leader))) {
			context.mark("FAULT partition-leader " + leader);
			RedisNode.sleep(FAULT.toMillis());
		}
		context.mark("HEAL partition-leader " + leader);
	}

	/** Every client's wall clock an hour forward, then an hour behind, then back. */
	private static FaultRun.Fault clockJumps(FakeClock clock) {
		return (context) -> {
			context.awaitNewHolder();
			try {
				clock.jump(HOUR);
				context.mark("FAULT client clocks +1h");
				RedisNode.sleep(1500);
				context.awaitNewHolder();
				clock.jump(HOUR.multipliedBy(-2));
				context.mark("FAULT client clocks -1h");
				RedisNode.sleep(1500);
			}
			finally {
				clock.jump(clock.offset().negated());
				context.mark("HEAL client clocks +0");
			}
		};
	}

	/** Every server's wall clock an hour forward while a client holds, then back. */
	private static FaultRun.Fault serverClocksForward(FakeClock clock) {
		return (context) -> {
			context.awaitNewHolder();
			try {
				clock.jump(HOUR);
				context.mark("FAULT server clocks +1h");
				RedisNode.sleep(1500);
			}
			finally {
				clock.jump(clock.offset().negated());
				context.mark("HEAL server clocks +0");
			}
		};
	}

}
