package dev.holdfast.test.server;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.BooleanSupplier;

import org.jspecify.annotations.Nullable;

/**
 * A real Redis Cluster of {@code redis-server} processes on free loopback ports, built the way
 * {@code redis-cli --cluster create} would, but with plain commands (the embedded binaries come
 * without {@code redis-cli}): every node starts with {@code cluster-enabled yes}; each primary
 * gets an equal range of the 16384 slots ({@code CLUSTER ADDSLOTS}) and its own config epoch;
 * the nodes meet ({@code CLUSTER MEET}); each replica follows its primary
 * ({@code CLUSTER REPLICATE}). {@link #start} returns once every node reports
 * {@code cluster_state:ok}, agrees on the owner of every slot, and every replica's link to its
 * primary is up. No persistence; nodes time out after {@code nodeTimeout}, after which a
 * replica of a failed primary is promoted.
 */
public final class RedisCluster implements AutoCloseable {

	/** Slots of a Redis Cluster. */
	public static final int SLOTS = 16384;

	private static final Duration READY_TIMEOUT = Duration.ofSeconds(30);

	private static @Nullable RedisCluster shared;

	private final List<RedisServer> nodes = new ArrayList<>();

	// Node id of each server, by port.
	private final Map<Integer, String> ids = new LinkedHashMap<>();

	private RedisCluster() {
	}

	/**
	 * Starts a cluster of {@code primaries} primaries, each with {@code replicasEach} replicas.
	 * @param nodeTimeout {@code cluster-node-timeout}: how long a silent node takes to be
	 * considered failed (and its replica promoted)
	 */
	public static RedisCluster start(int primaries, int replicasEach, Duration nodeTimeout) {
		if (primaries < 1 || replicasEach < 0) {
			throw new IllegalArgumentException("A cluster needs at least one primary");
		}
		RedisCluster cluster = new RedisCluster();
		try {
			List<String> arguments = List.of("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
					"--cluster-node-timeout", Long.toString(nodeTimeout.toMillis()),
					// A replica whose link was down longer than usual may still be promoted: the tests
					// decide what a replica has received, and measure what its promotion does.
					"--cluster-replica-validity-factor", "0",
					// A replica's first sync starts at once instead of 5 s later.
					"--repl-diskless-sync-delay", "0");
			int total = primaries * (1 + replicasEach);
			for (int i = 0; i < total; i++) {
				RedisServer node = RedisServer.startWith(arguments);
				cluster.nodes.add(node);
				cluster.ids.put(node.port(), node.commandString("CLUSTER", "MYID"));
			}
			for (int i = 0; i < primaries; i++) {
				RedisServer primary = cluster.nodes.get(i);
				int from = i * SLOTS / primaries;
				int to = (i + 1) * SLOTS / primaries;
				List<String> command = new ArrayList<>(List.of("CLUSTER", "ADDSLOTS"));
				for (int slot = from; slot < to; slot++) {
					command.add(Integer.toString(slot));
				}
				primary.command(command.toArray(String[]::new));
				primary.command("CLUSTER", "SET-CONFIG-EPOCH", Integer.toString(i + 1));
			}
			RedisServer first = cluster.nodes.get(0);
			for (RedisServer node : cluster.nodes.subList(1, total)) {
				first.command("CLUSTER", "MEET", "127.0.0.1", Integer.toString(node.port()));
			}
			cluster.await("every node to know every other", () -> cluster.nodes.stream()
				.allMatch((node) -> cluster.knownNodes(node) == total));
			for (int i = primaries; i < total; i++) {
				RedisServer primary = cluster.nodes.get((i - primaries) % primaries);
				cluster.nodes.get(i).command("CLUSTER", "REPLICATE", cluster.id(primary));
			}
			cluster.awaitHealthy();
			return cluster;
		}
		catch (RuntimeException ex) {
			cluster.close();
			throw ex;
		}
	}

	/**
	 * One cluster of 3 primaries with one replica each, started on first use and shared by every
	 * caller in this JVM (starting one takes seconds); its processes are killed when the JVM
	 * exits. For tests that do not kill its nodes or change its replication; moving a slot is fine.
	 */
	public static synchronized RedisCluster shared() {
		if (shared == null) {
			RedisCluster started = start(3, 1, Duration.ofSeconds(5));
			Runtime.getRuntime().addShutdownHook(new Thread(started::close, "holdfast-redis-cluster-stop"));
			shared = started;
		}
		return shared;
	}

	/** Every node, primaries first, in the order they were started; dead ones included. */
	public List<RedisServer> nodes() {
		return List.copyOf(this.nodes);
	}

	/** {@code host:port} of every node, for a client's seed list. */
	public List<String> addresses() {
		return this.nodes.stream().map(RedisServer::address).toList();
	}

	/** The live nodes that serve slots now (after a failover, promoted replicas included). */
	public List<RedisServer> primaries() {
		return this.nodes.stream().filter(RedisServer::isRunning).filter(this::servesSlots).toList();
	}

	/** The node id of {@code node}. */
	public String id(RedisServer node) {
		return this.ids.get(node.port());
	}

	/** The hash slot of a key, as Redis computes it (hash tags included). */
	public static int slot(String key) {
		byte[] bytes = key.getBytes(StandardCharsets.UTF_8);
		int start = key.indexOf('{');
		if (start >= 0) {
			int end = key.indexOf('}', start + 1);
			if (end > start + 1) {
				bytes = key.substring(start + 1, end).getBytes(StandardCharsets.UTF_8);
			}
		}
		return crc16(bytes) % SLOTS;
	}

	/** The live node that serves {@code slot} now, as the other live nodes see it. */
	public RedisServer primaryOf(int slot) {
		for (RedisServer node : this.nodes) {
			if (!node.isRunning()) {
				continue;
			}
			for (Object range : list(node.command("CLUSTER", "SLOTS"))) {
				List<?> entry = list(range);
				if (((Long) entry.get(0)) <= slot && slot <= ((Long) entry.get(1))) {
					int port = ((Long) list(entry.get(2)).get(1)).intValue();
					return byPort(port);
				}
			}
		}
		throw new IllegalStateException("No live node serves slot " + slot);
	}

	/** The replicas (running or not) that follow {@code primary}. */
	public List<RedisServer> replicasOf(RedisServer primary) {
		String id = id(primary);
		List<RedisServer> replicas = new ArrayList<>();
		for (RedisServer node : this.nodes) {
			if (node != primary && node.isRunning()) {
				String master = node.info("replication", "master_port");
				if (master != null && Integer.parseInt(master) == primary.port()) {
					replicas.add(node);
				}
			}
		}
		if (replicas.isEmpty()) {
			// Dead replicas no longer report; ask the cluster instead.
			for (String line : nodesLines()) {
				String[] fields = line.split(" ");
				if (fields.length > 3 && fields[3].equals(id)) {
					replicas.add(byPort(port(fields[1])));
				}
			}
		}
		return replicas;
	}

	/**
	 * Moves {@code slot} with its keys from the node serving it to {@code target}, as
	 * {@code redis-cli --cluster reshard} does: {@code IMPORTING} on the target,
	 * {@code MIGRATING} on the source, {@code MIGRATE} of its keys in batches, then
	 * {@code SETSLOT NODE} on every primary. {@code betweenBatches} runs while the slot is half
	 * moved (clients then get {@code ASK} for keys already moved), after each batch of
	 * {@code batchSize} keys.
	 */
	public void migrateSlot(int slot, RedisServer target, int batchSize, Runnable betweenBatches) {
		RedisServer source = primaryOf(slot);
		if (source == target) {
			throw new IllegalArgumentException("Slot " + slot + " is already on " + target.address());
		}
		String slotText = Integer.toString(slot);
		target.command("CLUSTER", "SETSLOT", slotText, "IMPORTING", id(source));
		source.command("CLUSTER", "SETSLOT", slotText, "MIGRATING", id(target));
		while (true) {
			List<?> keys = list(source.command("CLUSTER", "GETKEYSINSLOT", slotText, Integer.toString(batchSize)));
			if (keys.isEmpty()) {
				break;
			}
			List<String> migrate = new ArrayList<>(List.of("MIGRATE", "127.0.0.1", Integer.toString(target.port()), "",
					"0", "5000", "KEYS"));
			keys.forEach((key) -> migrate.add((String) key));
			source.command(migrate.toArray(String[]::new));
			betweenBatches.run();
		}
		String targetId = id(target);
		target.command("CLUSTER", "SETSLOT", slotText, "NODE", targetId);
		source.command("CLUSTER", "SETSLOT", slotText, "NODE", targetId);
		for (RedisServer node : primaries()) {
			if (node != source && node != target) {
				node.command("CLUSTER", "SETSLOT", slotText, "NODE", targetId);
			}
		}
		await("every node to see slot " + slot + " on " + target.address(),
				() -> this.nodes.stream().filter(RedisServer::isRunning).allMatch((node) -> {
					for (String line : lines(node.commandString("CLUSTER", "NODES"))) {
						if (line.startsWith(targetId) && containsSlot(line, slot)) {
							return true;
						}
					}
					return false;
				}));
	}

	/**
	 * Waits until the live nodes report {@code cluster_state:ok}, agree on who serves every slot,
	 * and every live replica's link to its primary is up: after {@link #start}, or after a failover.
	 */
	public void awaitHealthy() {
		await("cluster_state:ok on every live node, one view of the slots, replicas in sync", () -> {
			List<RedisServer> live = this.nodes.stream().filter(RedisServer::isRunning).toList();
			String view = null;
			for (RedisServer node : live) {
				String info = node.commandString("CLUSTER", "INFO");
				if (info == null || !info.contains("cluster_state:ok") || !info.contains("cluster_slots_ok:16384")) {
					return false;
				}
				String slots = slotView(node);
				if (view != null && !view.equals(slots)) {
					return false;
				}
				view = slots;
				if ("slave".equals(node.info("replication", "role"))
						&& !"up".equals(node.info("replication", "master_link_status"))) {
					return false;
				}
			}
			return true;
		});
	}

	@Override
	public void close() {
		for (RedisServer node : this.nodes) {
			try {
				node.close();
			}
			catch (RuntimeException ex) {
				// Close the others all the same.
			}
		}
	}

	private int knownNodes(RedisServer node) {
		int known = 0;
		for (String line : lines(node.commandString("CLUSTER", "NODES"))) {
			if (!line.contains("handshake") && !line.contains("noaddr")) {
				known++;
			}
		}
		return known;
	}

	private boolean servesSlots(RedisServer node) {
		for (String line : lines(node.commandString("CLUSTER", "NODES"))) {
			if (line.contains("myself") && line.contains("master")) {
				return line.split(" ").length > 8;
			}
		}
		return false;
	}

	private List<String> nodesLines() {
		for (RedisServer node : this.nodes) {
			if (node.isRunning()) {
				return lines(node.commandString("CLUSTER", "NODES"));
			}
		}
		throw new IllegalStateException("No node of the cluster runs");
	}

	private static String slotView(RedisServer node) {
		List<String> owners = new ArrayList<>();
		for (String line : lines(node.commandString("CLUSTER", "NODES"))) {
			String[] fields = line.split(" ");
			if (fields.length > 8 && fields[2].contains("master") && !fields[2].contains("fail")) {
				StringBuilder entry = new StringBuilder(fields[0]);
				for (int i = 8; i < fields.length; i++) {
					entry.append(' ').append(fields[i]);
				}
				owners.add(entry.toString());
			}
		}
		owners.sort(null);
		return String.join("\n", owners);
	}

	private static boolean containsSlot(String nodesLine, int slot) {
		String[] fields = nodesLine.split(" ");
		for (int i = 8; i < fields.length; i++) {
			String range = fields[i];
			if (range.startsWith("[")) {
				continue;
			}
			int dash = range.indexOf('-');
			int from = Integer.parseInt((dash < 0) ? range : range.substring(0, dash));
			int to = (dash < 0) ? from : Integer.parseInt(range.substring(dash + 1));
			if (from <= slot && slot <= to) {
				return true;
			}
		}
		return false;
	}

	private RedisServer byPort(int port) {
		for (RedisServer node : this.nodes) {
			if (node.port() == port) {
				return node;
			}
		}
		throw new IllegalStateException("No node on port " + port);
	}

	private static int port(String address) {
		// ip:port@busport
		String hostPort = address.contains("@") ? address.substring(0, address.indexOf('@')) : address;
		return Integer.parseInt(hostPort.substring(hostPort.lastIndexOf(':') + 1));
	}

	private static List<String> lines(@Nullable String text) {
		return (text != null) ? List.of(text.strip().split("\n")) : List.of();
	}

	private static List<?> list(@Nullable Object reply) {
		return (reply instanceof List<?> list) ? list : List.of();
	}

	private void await(String what, BooleanSupplier condition) {
		long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
		while (System.nanoTime() < deadline) {
			try {
				if (condition.getAsBoolean()) {
					return;
				}
			}
			catch (RuntimeException ex) {
				// A node not ready to answer yet: try again.
			}
			try {
				Thread.sleep(50);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				throw new IllegalStateException("Interrupted while waiting for " + what, ex);
			}
		}
		StringBuilder state = new StringBuilder();
		for (RedisServer node : this.nodes) {
			state.append('\n').append(node.address()).append(node.isRunning() ? "" : " (dead)");
			if (node.isRunning()) {
				try {
					state.append('\n').append(node.commandString("CLUSTER", "NODES"));
				}
				catch (RuntimeException ex) {
					state.append(": ").append(ex.getMessage());
				}
			}
		}
		throw new IllegalStateException("Redis Cluster: timed out after " + READY_TIMEOUT.toSeconds()
				+ "s waiting for " + what + state);
	}

	// CRC16/XMODEM, as Redis Cluster hashes keys.
	private static int crc16(byte[] bytes) {
		int crc = 0;
		for (byte b : bytes) {
			crc ^= (b & 0xff) << 8;
			for (int i = 0; i < 8; i++) {
				crc = ((crc & 0x8000) != 0) ? ((crc << 1) ^ 0x1021) : (crc << 1);
				crc &= 0xffff;
			}
		}
		return crc;
	}

}
