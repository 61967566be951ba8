package dev.holdfast.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.test.server.RedisCluster;
import dev.holdfast.test.server.RedisSentinels;
import dev.holdfast.test.server.RedisServer;

import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A replicated Redis loses its primary while a lock on it is held, and a replica is promoted:
 * Redis Sentinel (Spring Boot's {@code spring.data.redis.sentinel.*}; one primary, two replicas,
 * three Sentinels, {@code down-after-milliseconds} 1 s) and Redis Cluster
 * ({@code spring.data.redis.cluster.*}; three primaries with one replica each,
 * {@code cluster-node-timeout} 1 s), both through Boot's Lettuce auto-configuration, as an
 * application has them. Each round: client A takes the lock (5 s lease, renewed); the primary is
 * killed (SIGKILL), either after its replicas received the lock (their replication offset
 * reached the primary's) or while they were cut off from it (stopped with SIGSTOP and their
 * replication links killed before A's acquisition, resumed right after the kill); client B,
 * another application context with its own connections, then tries the lock for 9 s after the
 * kill. Counted per row: A's acquisitions (or refusals), B's acquisitions, second holders (B
 * acquired while A had not released: A's method would still be running), of which A's lease was
 * still valid (A had not even been told), A's leases lost, token regressions (B's token not above
 * A's), B's failed calls, and the failover time (kill → the topology names the new primary).
 * With {@code holdfast.redis.replicas-to-ack=1}, an acquisition no replica received is refused,
 * so no second holder can follow it. Written to
 * {@code target/faults/RedisFailoverMatrixTest.md}.
 */
@Tag("faults")
class RedisFailoverMatrixTest {

	private static final int ROUNDS = Integer.getInteger("faults.failover.rounds", 3);

	private static final Duration LEASE = Duration.ofSeconds(5);

	private static final Duration B_TRIES = Duration.ofSeconds(9);

	private final List<Row> rows = new ArrayList<>();

	private final SoftAssertions softly = new SoftAssertions();

	@Test
	void failoverMatrix() throws Exception {
		Row sentinelCut = run(Topology.SENTINEL, false, 0);
		this.softly.assertThat(sentinelCut.secondHolders)
			.as("control: Sentinel failover to a replica without the lock")
			.isPositive();
		expectExclusion(run(Topology.SENTINEL, true, 0));
		Row sentinelCutAcked = run(Topology.SENTINEL, false, 1);
		this.softly.assertThat(sentinelCutAcked.refused).as("acquisitions no replica received, refused")
			.isEqualTo(ROUNDS);
		this.softly.assertThat(sentinelCutAcked.secondHolders).as("second holders after a refused acquisition")
			.isZero();
		this.softly.assertThat(sentinelCutAcked.taken).as("acquisitions after the failover").isEqualTo(ROUNDS);
		expectExclusion(run(Topology.SENTINEL, true, 1));
		Row clusterCut = run(Topology.CLUSTER, false, 0);
		this.softly.assertThat(clusterCut.secondHolders)
			.as("control: Cluster failover to a replica without the lock")
			.isPositive();
		expectExclusion(run(Topology.CLUSTER, true, 0));
		finish("RedisFailoverMatrixTest");
	}

	/**
	 * The primary silently partitioned (iptables DROP on its port: replicas, Sentinels and
	 * clients all cut off) instead of killed; it stays up, holding the lock, until the partition
	 * heals at the end of the round. Needs root and iptables; skipped without.
	 */
	@Test
	void partitionMatrix() throws Exception {
		assumeTrue(Partition.unavailable().isEmpty(), () -> Partition.unavailable().orElseThrow());
		expectExclusion(run(Topology.SENTINEL, true, 0, true));
		run(Topology.SENTINEL, false, 0, true);
		Row acked = run(Topology.SENTINEL, false, 1, true);
		this.softly.assertThat(acked.secondHolders).as("second holders after a refused acquisition").isZero();
		finish("RedisPartitionMatrixTest");
	}

	/**
	 * No second holder that the first did not know of: one may follow only a lease that was lost
	 * (and told to its holder) because the failover took longer than the lease. Tokens only grow.
	 */
	private void expectExclusion(Row row) {
		this.softly.assertThat(row.unnoticed).as(row.name() + ": second holders while the first's lease is valid")
			.isZero();
		this.softly.assertThat(row.secondHolders).as(row.name() + ": second holders after a lost lease only")
			.isLessThanOrEqualTo(row.lost);
		this.softly.assertThat(row.regressions).as(row.name() + ": token regressions").isZero();
	}

	private Row run(Topology topology, boolean replicated, int replicasToAck) throws Exception {
		return run(topology, replicated, replicasToAck, false);
	}

	private Row run(Topology topology, boolean replicated, int replicasToAck, boolean partition) throws Exception {
		Row row = new Row(topology, replicated, replicasToAck, partition);
		for (int round = 0; round < ROUNDS; round++) {
			round(row);
		}
		this.rows.add(row);
		System.out.println(header() + "\n" + row.line());
		return row;
	}

	private void round(Row row) throws Exception {
		try (Replicated redis = row.topology.start()) {
			String name = "failover-" + UUID.randomUUID();
			List<String> properties = new ArrayList<>(redis.properties());
			properties.add("holdfast.redis.replicas-to-ack=" + row.replicasToAck);
			properties.add("holdfast.redis.replica-ack-timeout=500ms");
			properties.add("spring.data.redis.timeout=2s");
			// Two applications: each its own context, connection factory and template.
			runner(properties).run((a) -> runner(properties).run((b) -> failover(row, redis, name,
					a.getBean(DefaultLockTemplate.class), b.getBean(DefaultLockTemplate.class))));
		}
	}

	private void failover(Row row, Replicated redis, String name, DefaultLockTemplate first,
			DefaultLockTemplate second) throws Exception {
		// Both clients connected before the fault, as running applications are.
		second.tryAcquire("warm-up-" + UUID.randomUUID(), null, LockOptions.defaults()).ifPresent(Lease::close);
		String key = first.keyFor(name, null);
		RedisServer primary = redis.primaryOf(key);
		List<RedisServer> replicas = redis.replicasOf(primary);
		if (!row.replicated) {
			// Every replica stops receiving: stopped, and its replication link killed, so that
			// nothing the primary writes from now on reaches it.
			replicas.forEach(RedisServer::pause);
			primary.command("CLIENT", "KILL", "TYPE", "replica");
		}
		Lease lease = null;
		try {
			lease = first.acquire(name, null, LockOptions.defaults().leaseTime(LEASE).waitTime(Duration.ZERO));
			row.acquired++;
		}
		catch (LockBackendException ex) {
			row.refused++;
		}
		if (row.replicated) {
			awaitReplicated(primary, replicas);
		}
		long killedAt = System.nanoTime();
		// Killed, or cut off silently from replicas, Sentinels and clients (packets dropped).
		Partition partition = row.partition ? Partition.ports(primary.port()) : null;
		if (partition == null) {
			primary.kill();
		}
		replicas.forEach(RedisServer::resume);
		try {
			afterFault(row, redis, name, second, primary, lease, killedAt);
		}
		finally {
			if (partition != null) {
				partition.close();
			}
		}
	}

	private void afterFault(Row row, Replicated redis, String name, DefaultLockTemplate second,
			RedisServer primary, Lease lease, long killedAt) throws Exception {
		CompletableFuture<Long> failover = CompletableFuture.supplyAsync(() -> redis.awaitFailover(primary, killedAt));
		Optional<Lease> taken = Optional.empty();
		boolean unnoticed = false;
		long deadline = killedAt + B_TRIES.toNanos();
		while (System.nanoTime() < deadline && taken.isEmpty()) {
			try {
				taken = second.tryAcquire(name, null,
						LockOptions.defaults().leaseTime(LEASE).waitTime(Duration.ofMillis(500)));
			}
			catch (LockBackendException ex) {
				row.errors++;
				Thread.sleep(100);
			}
			if (taken.isPresent() && lease != null && lease.isValid()) {
				unnoticed = true;
			}
		}
		row.failoverMs.add(failover.get(30, TimeUnit.SECONDS));
		if (taken.isPresent()) {
			row.taken++;
			if (lease != null) {
				// A has not released: its method would still be running.
				row.secondHolders++;
				if (taken.get().fencingToken() <= lease.fencingToken()) {
					row.regressions++;
				}
			}
			taken.get().close();
		}
		if (unnoticed) {
			row.unnoticed++;
		}
		if (lease != null) {
			if (!lease.isValid()) {
				row.lost++;
			}
			lease.close();
		}
	}

	/** Waits until every replica's replication offset reached the primary's. */
	private static void awaitReplicated(RedisServer primary, List<RedisServer> replicas) throws InterruptedException {
		long target = Long.parseLong(primary.info("replication", "master_repl_offset"));
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
		for (RedisServer replica : replicas) {
			while (Long.parseLong(replica.info("replication", "slave_repl_offset")) < target) {
				if (System.nanoTime() > deadline) {
					throw new IllegalStateException("A replica did not receive the lock within 5 s");
				}
				Thread.sleep(5);
			}
		}
	}

	private static ApplicationContextRunner runner(List<String> properties) {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, HoldfastAutoConfiguration.class))
			.withPropertyValues(properties.toArray(String[]::new));
	}

	private void finish(String file) throws IOException {
		StringBuilder out = new StringBuilder(header());
		for (Row row : this.rows) {
			out.append('\n').append(row.line());
		}
		System.out.println(out);
		Files.createDirectories(FaultSuite.reportDir());
		Files.writeString(FaultSuite.reportDir().resolve(file + ".md"), out.append('\n'));
		this.softly.assertAll();
	}

	private static String header() {
		return "| topology | the replicas had the lock | replicas-to-ack | rounds | A acquired / refused | B acquired | "
				+ "second holder while A holds (A's lease still valid) | A leases lost | token regressions | B errors | "
				+ "failover ms (median, max) |\n" + "|---|---|---|---|---|---|---|---|---|---|---|";
	}

	/** A replicated Redis that a round starts and closes. */
	interface Replicated extends AutoCloseable {

		List<String> properties();

		RedisServer primaryOf(String lockKey);

		List<RedisServer> replicasOf(RedisServer primary);

		/** Waits until the topology names a primary other than {@code old}; ms since the kill. */
		long awaitFailover(RedisServer old, long killedAt);

		@Override
		void close();

	}

	enum Topology {

		SENTINEL {

			@Override
			Replicated start() {
				// Two replicas: after a failover one is left to acknowledge acquisitions.
				RedisSentinels sentinels = RedisSentinels.start(2, 3, Duration.ofSeconds(1));
				return new Replicated() {

					@Override
					public List<String> properties() {
						return List.of("spring.data.redis.sentinel.master=" + RedisSentinels.MASTER_NAME,
								"spring.data.redis.sentinel.nodes=" + String.join(",", sentinels.sentinelAddresses()));
					}

					@Override
					public RedisServer primaryOf(String lockKey) {
						return sentinels.primary();
					}

					@Override
					public List<RedisServer> replicasOf(RedisServer primary) {
						return sentinels.servers().stream().filter((server) -> server != primary).toList();
					}

					@Override
					public long awaitFailover(RedisServer old, long killedAt) {
						sentinels.awaitFailoverFrom(old);
						return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
					}

					@Override
					public void close() {
						sentinels.close();
					}

				};
			}

		},

		CLUSTER {

			@Override
			Replicated start() {
				RedisCluster cluster = RedisCluster.start(3, 1, Duration.ofSeconds(1));
				return new Replicated() {

					@Override
					public List<String> properties() {
						return List.of("spring.data.redis.cluster.nodes=" + String.join(",", cluster.addresses()),
								"spring.data.redis.lettuce.cluster.refresh.adaptive=true",
								"spring.data.redis.lettuce.cluster.refresh.period=1s");
					}

					@Override
					public RedisServer primaryOf(String lockKey) {
						return cluster.primaryOf(RedisCluster.slot("{" + lockKey + "}"));
					}

					@Override
					public List<RedisServer> replicasOf(RedisServer primary) {
						return cluster.replicasOf(primary);
					}

					@Override
					public long awaitFailover(RedisServer old, long killedAt) {
						cluster.awaitHealthy();
						return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
					}

					@Override
					public void close() {
						cluster.close();
					}

				};
			}

		};

		abstract Replicated start();

	}

	static final class Row {

		final Topology topology;

		final boolean replicated;

		final int replicasToAck;

		/** Whether the primary is partitioned (iptables) rather than killed. */
		final boolean partition;

		int acquired;

		int refused;

		int taken;

		int secondHolders;

		int unnoticed;

		int lost;

		int regressions;

		int errors;

		final List<Long> failoverMs = new ArrayList<>();

		Row(Topology topology, boolean replicated, int replicasToAck, boolean partition) {
			this.partition = partition;
			this.topology = topology;
			this.replicated = replicated;
			this.replicasToAck = replicasToAck;
		}

		String name() {
			return this.topology.name().toLowerCase(Locale.ROOT) + (this.replicated ? "-replicated" : "-cut-off")
					+ "-ack" + this.replicasToAck;
		}

		String line() {
			List<Long> sorted = this.failoverMs.stream().sorted().toList();
			String failover = sorted.isEmpty() ? "-"
					: sorted.get(sorted.size() / 2) + ", " + sorted.get(sorted.size() - 1);
			return String.format(Locale.ROOT, "| %s | %s | %d | %d | %d / %d | %d | %d (%d) | %d | %d | %d | %s |",
					this.topology.name().toLowerCase(Locale.ROOT) + (this.partition ? ", primary partitioned" : ""),
					this.replicated ? "yes" : "no (cut off)",
					this.replicasToAck, this.acquired + this.refused, this.acquired, this.refused, this.taken,
					this.secondHolders, this.unnoticed, this.lost, this.regressions, this.errors, failover);
		}

	}

}
