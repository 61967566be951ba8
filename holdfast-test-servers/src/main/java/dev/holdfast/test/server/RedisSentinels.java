package dev.holdfast.test.server;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * A replicated Redis watched by Sentinel, all real {@code redis-server} processes on free
 * loopback ports: one primary, replicas started with {@code --replicaof}, and Sentinels started
 * as {@code redis-server <config> --sentinel} that monitor the primary under
 * {@value #MASTER_NAME} with a quorum of a majority. {@link #start} returns once the replicas are
 * in sync and every Sentinel knows the replicas and the other Sentinels, so that a failover can
 * happen. No persistence.
 */
public final class RedisSentinels implements AutoCloseable {

	/** The name under which the Sentinels monitor the primary. */
	public static final String MASTER_NAME = "holdfast";

	private static final Duration READY_TIMEOUT = Duration.ofSeconds(30);

	private final List<RedisServer> servers = new ArrayList<>();

	private final List<RedisServer> sentinels = new ArrayList<>();

	private RedisSentinels() {
	}

	/**
	 * Starts a primary with {@code replicas} replicas and {@code sentinelCount} Sentinels.
	 * @param downAfter {@code down-after-milliseconds}: how long a silent primary takes to be
	 * considered down, after which the Sentinels promote a replica
	 */
	public static RedisSentinels start(int replicas, int sentinelCount, Duration downAfter) {
		RedisSentinels group = new RedisSentinels();
		try {
			// A replica's first sync starts at once instead of 5 s later.
			RedisServer primary = RedisServer.startWith(List.of("--repl-diskless-sync-delay", "0"));
			group.servers.add(primary);
			for (int i = 0; i < replicas; i++) {
				group.servers.add(RedisServer.startWith(List.of("--replicaof", "127.0.0.1",
						Integer.toString(primary.port()), "--repl-diskless-sync-delay", "0")));
			}
			int quorum = sentinelCount / 2 + 1;
			String config = "sentinel monitor " + MASTER_NAME + " 127.0.0.1 " + primary.port() + " " + quorum + "\n"
					+ "sentinel down-after-milliseconds " + MASTER_NAME + " " + downAfter.toMillis() + "\n"
					+ "sentinel failover-timeout " + MASTER_NAME + " 10000\n" + "sentinel parallel-syncs "
					+ MASTER_NAME + " 1\n";
			for (int i = 0; i < sentinelCount; i++) {
				group.sentinels.add(RedisServer.startSentinel(config));
			}
			group.await("replicas in sync and Sentinels that know each other", () -> {
				if (!Long.toString(replicas).equals(primary.info("replication", "connected_slaves"))) {
					return false;
				}
				for (RedisServer replica : group.servers.subList(1, group.servers.size())) {
					if (!"up".equals(replica.info("replication", "master_link_status"))) {
						return false;
					}
				}
				for (RedisServer sentinel : group.sentinels) {
					if (((List<?>) sentinel.command("SENTINEL", "REPLICAS", MASTER_NAME)).size() != replicas
							|| ((List<?>) sentinel.command("SENTINEL", "SENTINELS", MASTER_NAME))
								.size() != sentinelCount - 1) {
						return false;
					}
				}
				return true;
			});
			return group;
		}
		catch (RuntimeException ex) {
			group.close();
			throw ex;
		}
	}

	/** The Sentinels' {@code host:port} addresses. */
	public List<String> sentinelAddresses() {
		return this.sentinels.stream().map(RedisServer::address).toList();
	}

	/** The Sentinels. */
	public List<RedisServer> sentinels() {
		return List.copyOf(this.sentinels);
	}

	/** The data nodes: the first primary first, then the replicas, dead ones included. */
	public List<RedisServer> servers() {
		return List.copyOf(this.servers);
	}

	/** The data node that the first live Sentinel names as the primary now. */
	public RedisServer primary() {
		for (RedisServer sentinel : this.sentinels) {
			if (!sentinel.isRunning()) {
				continue;
			}
			List<?> address = (List<?>) sentinel.command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME);
			int port = Integer.parseInt((String) address.get(1));
			for (RedisServer server : this.servers) {
				if (server.port() == port) {
					return server;
				}
			}
		}
		throw new IllegalStateException("No live Sentinel names a primary");
	}

	/**
	 * Waits until every live Sentinel names a primary other than {@code old}, and that node
	 * reports itself as the primary.
	 */
	public RedisServer awaitFailoverFrom(RedisServer old) {
		await("a failover from " + old.address(), () -> {
			for (RedisServer sentinel : this.sentinels) {
				if (sentinel.isRunning()) {
					List<?> address = (List<?>) sentinel.command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME);
					if (Integer.parseInt((String) address.get(1)) == old.port()) {
						return false;
					}
				}
			}
			return "master".equals(primary().info("replication", "role"));
		});
		return primary();
	}

	@Override
	public void close() {
		for (RedisServer server : this.sentinels) {
			server.close();
		}
		for (RedisServer server : this.servers) {
			server.close();
		}
	}

	private void await(String what, BooleanSupplier condition) {
		long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
		RuntimeException last = null;
		while (System.nanoTime() < deadline) {
			try {
				if (condition.getAsBoolean()) {
					return;
				}
			}
			catch (RuntimeException ex) {
				last = ex;
			}
			try {
				Thread.sleep(50);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException("Interrupted while waiting for " + what, ex);
			}
		}
		throw new IllegalStateException("Redis Sentinel: timed out after " + READY_TIMEOUT.toSeconds()
				+ "s waiting for " + what, last);
	}

}
