package dev.holdfast.redlock;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.api.redisnode.RedisNodes;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;
import org.redisson.config.EqualJitterDelay;

/**
 * The nodes of a Redlock backend: their clients (made and shut down here when the backend
 * connects them itself), the quorum, and the checks of the nodes themselves: reachability and
 * the persistence that the algorithm's safety needs.
 */
final class RedlockNodes implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(RedlockLockBackend.class);

	private final List<Node> nodes;

	private final int quorum;

	private final byte[] releaseChannel;

	private final long nodeTimeoutNanos;

	private final @Nullable Runnable onClose;

	private final RedlockIo io;

	private RedlockNodes(List<String> names, List<RedissonClient> clients, RedlockSettings settings,
			@Nullable Runnable onClose) {
		if (clients.isEmpty()) {
			throw new IllegalArgumentException("Redlock needs at least one node");
		}
		List<Node> nodes = new ArrayList<>(clients.size());
		RedlockIo io = new RedlockIo(settings.nodeTimeout().toMillis());
		try {
			for (int i = 0; i < clients.size(); i++) {
				RedissonClient client = clients.get(i);
				nodes.add(new Node(names.get(i), client, NodeConnection.of(client, io)));
			}
		}
		catch (RuntimeException ex) {
			nodes.forEach((node) -> node.connection().close());
			io.close();
			throw ex;
		}
		this.io = io;
		this.nodes = List.copyOf(nodes);
		// The connections open in parallel; wait for them (bounded by the connect timeout), so that
		// the first requests do not spend their node timeout on connecting.
		long connectTimeout = clients.stream().mapToLong(NodeConnection::connectTimeoutMillis).max().orElse(0);
		long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(connectTimeout);
		for (Node node : this.nodes) {
			node.connection().awaitOpen(deadline);
		}
		this.quorum = nodes.size() / 2 + 1;
		this.releaseChannel = RedlockScripts.bytes(settings.releaseChannel());
		this.nodeTimeoutNanos = settings.nodeTimeout().toNanos();
		this.onClose = onClose;
	}

	/** The release channel, encoded for the release script. */
	byte[] releaseChannel() {
		return this.releaseChannel;
	}

	/** Nodes over clients that the caller owns and closes, named {@code node-<index>}. */
	static RedlockNodes of(List<RedissonClient> clients, RedlockSettings settings) {
		return new RedlockNodes(namesOf(clients), clients, settings, null);
	}

	/** Connects to the nodes as {@link RedlockLockBackend#connect} describes; owns the clients. */
	static RedlockNodes connect(List<String> addresses, @Nullable String username, @Nullable String password,
			Duration connectTimeout, RedlockSettings settings) {
		List<String> names = checkAddresses(addresses);
		int threads = Math.max(2, Math.min(4, Runtime.getRuntime().availableProcessors()));
		EventLoopGroup group = new MultiThreadIoEventLoopGroup(threads, daemonThreads("holdfast-redlock-io-"),
				NioIoHandler.newFactory());
		ExecutorService executor = Executors.newFixedThreadPool(2, daemonThreads("holdfast-redlock-"));
		List<RedissonClient> clients = new ArrayList<>();
		try {
			for (String address : addresses) {
				Config config = new Config();
				config.setEventLoopGroup(group);
				config.setExecutor(executor);
				config.setCodec(StringCodec.INSTANCE);
				config.setLazyInitialization(true);
				config.setUseScriptCache(true);
				config.setUsername(username);
				config.setPassword(password);
				config.useSingleServer()
					.setAddress(address)
					.setTimeout(toIntMillis(settings.nodeTimeout()))
					.setConnectTimeout(toIntMillis(connectTimeout))
					.setRetryAttempts(0)
					// A node that comes back rejoins within about a second, however long it was away.
					.setReconnectionDelay(new EqualJitterDelay(Duration.ofMillis(50), Duration.ofSeconds(1)))
					.setConnectionMinimumIdleSize(1)
					.setConnectionPoolSize(16)
					.setSubscriptionConnectionMinimumIdleSize(1)
					.setSubscriptionConnectionPoolSize(1)
					.setClientName("holdfast-redlock");
				clients.add(Redisson.create(config));
			}
		}
		catch (RuntimeException ex) {
			shutdown(clients, group, executor);
			throw ex;
		}
		return new RedlockNodes(names, clients, settings, () -> shutdown(clients, group, executor));
	}

	/** The nodes, in configuration order. */
	List<Node> list() {
		return this.nodes;
	}

	Node get(int index) {
		return this.nodes.get(index);
	}

	int size() {
		return this.nodes.size();
	}

	/** The number of nodes that must agree: {@code size() / 2 + 1}. */
	int quorum() {
		return this.quorum;
	}

	/**
	 * Pings every node in parallel, each bounded by the node timeout.
	 * @return the number of nodes that answered
	 */
	int reachable() {
		long start = System.nanoTime();
		Round round = Round.send(this.nodes, (node) -> node.connection().ping(), (r) -> false);
		round.awaitOrFail(start + this.nodeTimeoutNanos, "pinging the nodes");
		return round.count("PONG"::equals);
	}

	/** See {@link RedlockLockBackend#setupWarnings()}. */
	List<String> setupWarnings() {
		List<String> warnings = new ArrayList<>();
		if (this.nodes.size() < 3) {
			warnings.add("Redlock is configured with " + this.nodes.size()
					+ " node(s): with fewer than 3 the lock does not survive the loss of any node; configure at least 3 "
					+ "independent masters in holdfast.redlock.nodes");
		}
		else if (this.nodes.size() % 2 == 0) {
			warnings.add("Redlock is configured with an even number of nodes (" + this.nodes.size()
					+ "): the quorum is " + this.quorum + ", so the last node adds no fault tolerance; use an odd count");
		}
		Object[] configs = new Object[this.nodes.size()];
		// Two tries: the first request to a node also opens its connection.
		for (int attempt = 0; attempt < 2; attempt++) {
			List<Integer> unanswered = new ArrayList<>();
			for (int i = 0; i < configs.length; i++) {
				if (!(configs[i] instanceof Map)) {
					unanswered.add(i);
				}
			}
			if (unanswered.isEmpty()) {
				break;
			}
			long start = System.nanoTime();
			Round round = Round.send(unanswered.stream().map(this.nodes::get).toList(),
					(node) -> node.client().getRedisNodes(RedisNodes.SINGLE).getInstance().getConfigAsync("append*"),
					(r) -> false);
			round.awaitOrFail(start + this.nodeTimeoutNanos + TimeUnit.SECONDS.toNanos(1), "checking the nodes' persistence");
			for (int i = 0; i < unanswered.size(); i++) {
				configs[unanswered.get(i)] = round.result(i);
			}
		}
		List<String> volatileNodes = new ArrayList<>();
		for (int i = 0; i < this.nodes.size(); i++) {
			String name = this.nodes.get(i).name();
			Object result = configs[i];
			if (result instanceof Map<?, ?> config) {
				boolean appendOnly = "yes".equalsIgnoreCase(String.valueOf(config.get("appendonly")));
				boolean fsyncAlways = "always".equalsIgnoreCase(String.valueOf(config.get("appendfsync")));
				if (!appendOnly || !fsyncAlways) {
					volatileNodes.add(name + " (appendonly " + config.get("appendonly") + ", appendfsync "
							+ config.get("appendfsync") + ")");
				}
			}
			else {
				warnings.add("Redlock node " + name + " could not be checked for persistence: "
						+ Round.describe(result) + "; make sure it runs with appendonly yes and appendfsync always");
			}
		}
		if (!volatileNodes.isEmpty()) {
			warnings.add("Redlock nodes do not persist every write before acknowledging it: "
					+ String.join(", ", volatileNodes) + ". A node that restarts forgets the locks it held, "
					+ "and another client can then build a quorum with it; run the nodes with appendonly yes and "
					+ "appendfsync always, or keep a crashed node down for longer than the longest lease time");
		}
		return warnings;
	}

	/** Closes the nodes' script connections, and shuts down the clients if they were made by {@link #connect}. */
	@Override
	public void close() {
		for (Node node : this.nodes) {
			node.connection().close();
		}
		this.io.close();
		if (this.onClose != null) {
			this.onClose.run();
		}
	}

	/** See {@link RedlockLockBackend#checkAddresses(List)}. */
	static List<String> checkAddresses(List<String> addresses) {
		if (addresses.isEmpty()) {
			throw new IllegalArgumentException("No Redlock node configured");
		}
		List<String> names = new ArrayList<>();
		Set<String> seen = new HashSet<>();
		for (int i = 0; i < addresses.size(); i++) {
			String address = addresses.get(i);
			URI uri;
			try {
				uri = new URI(address.trim());
			}
			catch (URISyntaxException ex) {
				throw new IllegalArgumentException("Redlock node [" + i + "] '" + address
						+ "' is not a URI; write it as redis://host:port or rediss://host:port");
			}
			String scheme = (uri.getScheme() != null) ? uri.getScheme().toLowerCase(Locale.ROOT) : "";
			if (!scheme.equals("redis") && !scheme.equals("rediss") || uri.getHost() == null) {
				throw new IllegalArgumentException("Redlock node [" + i + "] '" + address
						+ "' must be written as redis://host:port or rediss://host:port");
			}
			int port = (uri.getPort() != -1) ? uri.getPort() : 6379;
			String name = scheme + "://" + uri.getHost().toLowerCase(Locale.ROOT) + ":" + port;
			if (!seen.add(uri.getHost().toLowerCase(Locale.ROOT) + ":" + port)) {
				throw new IllegalArgumentException("Redlock node [" + i + "] " + name
						+ " is listed twice; every node must be a different, independent master");
			}
			names.add(name);
		}
		return names;
	}

	private static List<String> namesOf(List<RedissonClient> clients) {
		List<String> names = new ArrayList<>();
		for (int i = 0; i < clients.size(); i++) {
			names.add("node-" + i);
		}
		return names;
	}

	private static int toIntMillis(Duration duration) {
		return (int) Math.min(Integer.MAX_VALUE, Math.max(1, duration.toMillis()));
	}

	private static ThreadFactory daemonThreads(String prefix) {
		AtomicInteger count = new AtomicInteger();
		return (runnable) -> {
			Thread thread = new Thread(runnable, prefix + count.incrementAndGet());
			thread.setDaemon(true);
			return thread;
		};
	}

	private static void shutdown(List<RedissonClient> clients, EventLoopGroup group, ExecutorService executor) {
		for (RedissonClient client : clients) {
			try {
				client.shutdown(0, 2, TimeUnit.SECONDS);
			}
			catch (RuntimeException ex) {
				logger.debug("Could not shut down a Redlock client", ex);
			}
		}
		group.shutdownGracefully(0, 2, TimeUnit.SECONDS);
		executor.shutdown();
	}

}
