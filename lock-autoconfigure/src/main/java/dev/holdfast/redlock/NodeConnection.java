package dev.holdfast.redlock;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;

import io.netty.channel.socket.nio.NioSocketChannel;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.redisson.Redisson;
import org.redisson.api.NodeType;
import org.redisson.api.RedissonClient;
import org.redisson.client.RedisClient;
import org.redisson.client.RedisClientConfig;
import org.redisson.client.RedisConnectionException;
import org.redisson.config.TransportMode;
import org.redisson.connection.ConnectionManager;
import org.redisson.misc.RedisURI;

/**
 * The requests of the algorithm to one node, on one pipelined connection opened by Redisson's
 * low-level client ({@code org.redisson.client}) with the settings of the node's
 * {@link RedissonClient} (address, credentials, TLS, database, client name, timeouts), on the
 * backend's own I/O thread ({@link RedlockIo}). Once open, the connection carries plain RESP
 * ({@link NodeChannel}): no connection pool, no retry timers, no command objects. A request is
 * queued at once and written with the others of its round; it completes on the I/O thread that
 * reads its reply. Requests to one node are applied in the order they were sent, so a release sent
 * after an acquire can never overtake it (while the connection lasts).
 * <p>
 * Also remembers whether the node is unresponsive: a request to it timed out, or a caller stopped
 * waiting for it at its deadline, and no reply has come since. An acquisition does not wait for an
 * unresponsive node's answer when the others already decide it cannot win (see
 * {@link RedlockLockBackend}).
 */
final class NodeConnection implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(RedlockLockBackend.class);

	/** How long a failed or broken connection answers every request with its failure before a new one is tried. */
	private static final long RECONNECT_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

	private final RedisClient client;

	private final RedlockIo io;

	private final ReentrantLock connecting = new ReentrantLock();

	private volatile @Nullable CompletableFuture<NodeChannel> channel;

	// Requests made while the connection opens, sent in the order they were made once it is open
	// or failed (dependents of a CompletableFuture run in reverse order of registration, which
	// would reorder them). Guarded by connecting; at most NodeChannel.MAX_PENDING.
	private final ArrayDeque<Runnable> parked = new ArrayDeque<>();

	// The opening whose parked requests have all been sent: requests go straight to it.
	private volatile @Nullable CompletableFuture<NodeChannel> settled;

	private volatile long connectedAtNanos;

	private volatile boolean unresponsive;

	private volatile boolean closed;

	private NodeConnection(RedisClient client, RedlockIo io) {
		this.client = client;
		this.io = io;
	}

	/**
	 * A connection made like those of {@code client}, which must be a single-server Redisson
	 * client, on the I/O thread of {@code io}; it starts opening at once, without waiting.
	 * @throws IllegalArgumentException when the client is not a single-server Redisson client
	 */
	static NodeConnection of(RedissonClient client, RedlockIo io) {
		if (!(client instanceof Redisson redisson) || !client.getConfig().isSingleConfig()) {
			throw new IllegalArgumentException(
					"Redlock needs one single-server Redisson client per node (Config.useSingleServer()), got " + client);
		}
		ConnectionManager manager = redisson.getCommandExecutor().getConnectionManager();
		String address = client.getConfig().useSingleServer().getAddress();
		// The client's connection settings, as Redisson derives them from its configuration; only
		// the event loop (the backend's I/O thread) and the periodic ping (replaced by the node
		// timeout on every request) differ. The client made here is only a template: never connected.
		RedisClientConfig config = manager.createClient(NodeType.MASTER, new RedisURI(address), null).getConfig();
		config.setGroup(io.group());
		config.setSocketChannelClass(NioSocketChannel.class);
		config.setPingConnectionInterval(0);
		if (client.getConfig().getTransportMode() != TransportMode.NIO) {
			// Redisson's resolver uses datagram channels of its own transport; this I/O thread is NIO.
			config.setResolverGroup(io.resolver());
		}
		NodeConnection connection = new NodeConnection(RedisClient.create(config), io);
		connection.channel();
		return connection;
	}

	/**
	 * Waits until the connection that was opened first is open or failed, at most until
	 * {@code deadline} ({@link System#nanoTime()}): the first requests then do not spend their node
	 * timeout on connecting. A node that is down fails at once or by the deadline.
	 */
	void awaitOpen(long deadline) {
		CompletableFuture<NodeChannel> current = this.channel;
		long remaining = deadline - System.nanoTime();
		if (current == null || remaining <= 0) {
			return;
		}
		try {
			current.get(remaining, TimeUnit.NANOSECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		catch (ExecutionException | TimeoutException ex) {
			// Down or slow: requests fail or wait on it as they come.
		}
	}

	/** The connect timeout of the client's configuration. */
	static long connectTimeoutMillis(RedissonClient client) {
		return client.getConfig().useSingleServer().getConnectTimeout();
	}

	/** The node's address. */
	String address() {
		return String.valueOf(this.client.getConfig().getAddress());
	}

	/** Pings the node on this connection. */
	CompletableFuture<Object> ping() {
		NodeChannel ready = ready();
		if (ready != null) {
			return ready.ping().result;
		}
		return whenOpen((opened) -> opened.ping().result);
	}

	/**
	 * Runs a script by its digest ({@code EVALSHA}), and by its text when the node does not know it
	 * ({@code NOSCRIPT}).
	 * @param params {@code numkeys, keys..., args...}: byte arrays (sent as they are), numbers or strings
	 */
	@SuppressWarnings("unchecked")
	<R> CompletableFuture<R> eval(RedlockScripts.Script<R> script, Object... params) {
		NodeChannel ready = ready();
		if (ready != null) {
			return (CompletableFuture<R>) ready.eval(script, params).result;
		}
		return whenOpen((opened) -> (CompletableFuture<R>) opened.eval(script, params).result);
	}

	// Sends the request once the connection being opened is open (or fails it with the opening),
	// after the requests parked before it.
	private <T> CompletableFuture<T> whenOpen(Function<NodeChannel, CompletableFuture<T>> send) {
		CompletableFuture<NodeChannel> opening = channel();
		this.connecting.lock();
		try {
			if (opening == this.channel && opening != this.settled) {
				if (this.parked.size() >= NodeChannel.MAX_PENDING) {
					return CompletableFuture.failedFuture(new RedisConnectionException(NodeChannel.MAX_PENDING
							+ " requests to " + address() + " are waiting for the connection to open"));
				}
				CompletableFuture<T> result = new CompletableFuture<>();
				this.parked.add(() -> opening.thenCompose(send).whenComplete((value, error) -> {
					if (error != null) {
						result.completeExceptionally(error);
					}
					else {
						result.complete(value);
					}
				}));
				return result;
			}
		}
		finally {
			this.connecting.unlock();
		}
		return opening.thenCompose(send);
	}

	// Once an opening is done: sends what was parked on it, in order (non-blocking: requests are
	// only queued for the I/O thread), then lets requests go straight to it.
	private void settle(CompletableFuture<NodeChannel> opening) {
		this.connecting.lock();
		try {
			Runnable next;
			while ((next = this.parked.poll()) != null) {
				next.run();
			}
			if (this.channel == opening) {
				this.settled = opening;
			}
		}
		finally {
			this.connecting.unlock();
		}
	}

	// The open channel, or null while it is being opened (or its parked requests are being sent)
	// or has failed.
	private @Nullable NodeChannel ready() {
		CompletableFuture<NodeChannel> current = channel();
		if (current == this.settled && current.isDone() && !current.isCompletedExceptionally()) {
			NodeChannel opened = current.join();
			return opened.isActive() ? opened : null;
		}
		return null;
	}

	/** Whether the last request timed out, or a caller gave up waiting for it, with no reply since. */
	boolean unresponsive() {
		return this.unresponsive;
	}

	/** A caller stopped waiting for this node's reply at its deadline, or a request timed out. */
	void markUnresponsive() {
		this.unresponsive = true;
	}

	/** The node replied. */
	void answered() {
		if (this.unresponsive) {
			this.unresponsive = false;
		}
	}

	/** The connection left a request unanswered for {@code millis} with nothing read: it is being closed. */
	void silent(long millis) {
		logger.warn("Redlock connection to " + address() + " has not answered for " + millis
				+ " ms; closing it, the next request opens a new one");
	}

	/** The connection failed (it is being closed): an I/O error at DEBUG, anything else (protocol) at WARN. */
	void failed(Throwable cause) {
		if (cause instanceof java.io.IOException) {
			logger.debug("Redlock connection to " + address() + " failed; closing it", cause);
		}
		else {
			// A reply that does not parse, or that no request asked for: out of step with the node.
			logger.warn("Redlock connection to " + address() + " failed; closing it", cause);
		}
	}

	// The open connection, or one being opened. A connection that failed to open, broke or was
	// closed is replaced by a new one, at most every RECONNECT_DELAY_NANOS; until then requests
	// fail at once. Opening is non-blocking, so the lock is never held while waiting on the network.
	private CompletableFuture<NodeChannel> channel() {
		CompletableFuture<NodeChannel> current = this.channel;
		if (current != null && usable(current)) {
			return current;
		}
		this.connecting.lock();
		try {
			current = this.channel;
			if (current != null && usable(current)) {
				return current;
			}
			if (this.closed) {
				return CompletableFuture.failedFuture(new IllegalStateException("Redlock backend closed"));
			}
			if (current != null) {
				if (System.nanoTime() - this.connectedAtNanos < RECONNECT_DELAY_NANOS) {
					return current.isCompletedExceptionally() ? current
							: CompletableFuture.failedFuture(new RedisConnectionException("Connection to "
									+ address() + " is broken; reconnecting"));
				}
				NodeChannel stale = (current.isDone() && !current.isCompletedExceptionally()) ? current.join() : null;
				if (stale != null) {
					stale.close();
				}
			}
			this.connectedAtNanos = System.nanoTime();
			CompletableFuture<NodeChannel> installing = this.client.connectAsync()
				.toCompletableFuture()
				.thenCompose((connection) -> NodeChannel.install(connection, this, this.io));
			// Bounded: Redisson's opening never completes when the timer of the client it was made
			// like is stopped (that client shut down first). A connection that opens too late is
			// closed.
			CompletableFuture<NodeChannel> opening = installing.copy().orTimeout(openTimeoutMillis(), TimeUnit.MILLISECONDS);
			installing.thenAccept((late) -> {
				if (opening.isCompletedExceptionally()) {
					late.close();
				}
			});
			this.channel = opening;
			opening.whenComplete((opened, error) -> settle(opening));
			return opening;
		}
		catch (RuntimeException ex) {
			return CompletableFuture.failedFuture(ex);
		}
		finally {
			this.connecting.unlock();
		}
	}

	// TCP and TLS (connect timeout), then AUTH, HELLO, SELECT, CLIENT SETNAME (command timeout).
	private long openTimeoutMillis() {
		return (long) this.client.getConfig().getConnectTimeout() + this.client.getConfig().getCommandTimeout();
	}

	/** The handler names of the open connection's pipeline, empty while none is open (for tests). */
	java.util.List<String> handlerNames() {
		NodeChannel ready = ready();
		return (ready != null) ? ready.handlerNames() : java.util.List.of();
	}

	private static boolean usable(CompletableFuture<NodeChannel> channel) {
		if (!channel.isDone()) {
			return true;
		}
		if (channel.isCompletedExceptionally()) {
			return false;
		}
		return channel.join().isActive();
	}

	/** Closes the connection and the low-level client (not the Redisson client it was made like). */
	@Override
	public void close() {
		this.connecting.lock();
		try {
			this.closed = true;
			CompletableFuture<NodeChannel> current = this.channel;
			if (current != null) {
				current.thenAccept(NodeChannel::close);
			}
		}
		finally {
			this.connecting.unlock();
		}
		try {
			CompletionStage<Void> shutdown = this.client.shutdownAsync();
			shutdown.exceptionally((error) -> {
				logger.debug("Could not shut down a Redlock node connection", error);
				return null;
			});
		}
		catch (RuntimeException ex) {
			logger.debug("Could not shut down a Redlock node connection", ex);
		}
	}

}
