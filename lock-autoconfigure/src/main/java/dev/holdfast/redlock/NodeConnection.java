package dev.holdfast.redlock;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.redisson.Redisson;
import org.redisson.api.NodeType;
import org.redisson.api.RedissonClient;
import org.redisson.client.RedisClient;
import org.redisson.client.RedisConnection;
import org.redisson.client.RedisConnectionException;
import org.redisson.client.RedisNoScriptException;
import org.redisson.client.codec.StringCodec;
import org.redisson.client.protocol.RedisCommands;
import org.redisson.connection.ConnectionManager;
import org.redisson.misc.RedisURI;

/**
 * The requests of the algorithm to one node, on one pipelined connection of Redisson's low-level
 * client ({@code org.redisson.client}), made with the settings of the node's
 * {@link RedissonClient} (address, credentials, TLS, event loop, timer). A request is written to
 * the connection at once and completes on the I/O thread that decodes its reply: no connection
 * pool, no retry timers, no executor hop. Requests to one node are applied in the order they were
 * sent, so a release sent after an acquire can never overtake it (while the connection lasts).
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

	private final long timeoutMillis;

	private final ReentrantLock connecting = new ReentrantLock();

	private volatile @Nullable CompletableFuture<RedisConnection> connection;

	private volatile long connectedAtNanos;

	private volatile boolean unresponsive;

	private volatile boolean closed;

	private NodeConnection(RedisClient client, long timeoutMillis) {
		this.client = client;
		this.timeoutMillis = timeoutMillis;
	}

	/**
	 * A connection made like those of {@code client}, which must be a single-server Redisson
	 * client; it starts opening at once, without waiting.
	 * @throws IllegalArgumentException when the client is not a single-server Redisson client
	 */
	static NodeConnection of(RedissonClient client, long timeoutMillis) {
		if (!(client instanceof Redisson redisson) || !client.getConfig().isSingleConfig()) {
			throw new IllegalArgumentException(
					"Redlock needs one single-server Redisson client per node (Config.useSingleServer()), got " + client);
		}
		ConnectionManager manager = redisson.getCommandExecutor().getConnectionManager();
		String address = client.getConfig().useSingleServer().getAddress();
		NodeConnection connection = new NodeConnection(
				manager.createClient(NodeType.MASTER, new RedisURI(address), null), timeoutMillis);
		connection.connection();
		return connection;
	}

	/**
	 * Waits until the connection that was opened first is open or failed, at most until
	 * {@code deadline} ({@link System#nanoTime()}): the first requests then do not spend their node
	 * timeout on connecting. A node that is down fails at once or by the deadline.
	 */
	void awaitOpen(long deadline) {
		CompletableFuture<RedisConnection> current = this.connection;
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
		catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException ex) {
			// Down or slow: requests fail or wait on it as they come.
		}
	}

	/** The connect timeout of the client's configuration. */
	static long connectTimeoutMillis(RedissonClient client) {
		return client.getConfig().useSingleServer().getConnectTimeout();
	}

	/** Pings the node on this connection. */
	CompletableFuture<Object> ping() {
		return connection().thenCompose((opened) -> opened
			.<String, Object>async(this.timeoutMillis, StringCodec.INSTANCE, RedisCommands.PING)
			.toCompletableFuture());
	}

	/**
	 * Runs a script by its digest ({@code EVALSHA}), and by its text when the node does not know it
	 * yet ({@code NOSCRIPT}, e.g. after a restart).
	 * @param params {@code numkeys, keys..., args...}
	 */
	<R> CompletableFuture<R> eval(RedlockScripts.Script<R> script, Object... params) {
		CompletableFuture<RedisConnection> current = connection();
		RedisConnection ready = (current.isDone() && !current.isCompletedExceptionally()) ? current.join() : null;
		if (ready != null) {
			return send(ready, script, params);
		}
		return current.thenCompose((opened) -> send(opened, script, params));
	}

	private <R> CompletableFuture<R> send(RedisConnection connection, RedlockScripts.Script<R> script,
			Object[] params) {
		Object[] args = new Object[params.length + 1];
		args[0] = script.sha();
		System.arraycopy(params, 0, args, 1, params.length);
		CompletableFuture<R> result = new CompletableFuture<>();
		connection.<R, R>async(this.timeoutMillis, StringCodec.INSTANCE, script.evalsha(), args)
			.whenComplete((value, error) -> {
				if (error == null) {
					this.unresponsive = false;
					result.complete(value);
				}
				else if (unwrap(error) instanceof RedisNoScriptException) {
					args[0] = script.text();
					connection.<R, R>async(this.timeoutMillis, StringCodec.INSTANCE, script.eval(), args)
						.whenComplete((retried, again) -> complete(result, retried, again));
				}
				else {
					complete(result, value, error);
				}
			});
		return result;
	}

	private <R> void complete(CompletableFuture<R> result, @Nullable R value, @Nullable Throwable error) {
		if (error == null) {
			this.unresponsive = false;
			result.complete(value);
		}
		else {
			if (Round.isTimeout(unwrap(error))) {
				this.unresponsive = true;
			}
			result.completeExceptionally(error);
		}
	}

	/** Whether the last request timed out, or a caller gave up waiting for it, with no reply since. */
	boolean unresponsive() {
		return this.unresponsive;
	}

	/** A caller stopped waiting for this node's reply at its deadline. */
	void markUnresponsive() {
		this.unresponsive = true;
	}

	// The open connection, or one being opened. A connection that failed to open, broke or was
	// closed is replaced by a new one, at most every RECONNECT_DELAY_NANOS; until then requests
	// fail at once. Opening is non-blocking, so the lock is never held while waiting on the network.
	private CompletableFuture<RedisConnection> connection() {
		CompletableFuture<RedisConnection> current = this.connection;
		if (current != null && usable(current)) {
			return current;
		}
		this.connecting.lock();
		try {
			current = this.connection;
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
									+ this.client.getAddr() + " is broken; reconnecting"));
				}
				RedisConnection stale = (current.isDone() && !current.isCompletedExceptionally()) ? current.join() : null;
				if (stale != null) {
					// Closed, so that Redisson's watchdog does not reconnect it as well.
					stale.closeAsync();
				}
			}
			this.connectedAtNanos = System.nanoTime();
			CompletableFuture<RedisConnection> opening = this.client.connectAsync().toCompletableFuture();
			this.connection = opening;
			return opening;
		}
		catch (RuntimeException ex) {
			return CompletableFuture.failedFuture(ex);
		}
		finally {
			this.connecting.unlock();
		}
	}

	private static boolean usable(CompletableFuture<RedisConnection> connection) {
		if (!connection.isDone()) {
			return true;
		}
		if (connection.isCompletedExceptionally()) {
			return false;
		}
		RedisConnection opened = connection.join();
		return !opened.isClosed() && opened.isActive();
	}

	private static Throwable unwrap(Throwable error) {
		Throwable current = error;
		while (current instanceof java.util.concurrent.CompletionException && current.getCause() != null) {
			current = current.getCause();
		}
		return current;
	}

	/** Closes the connection and the low-level client (not the Redisson client it was made like). */
	@Override
	public void close() {
		this.connecting.lock();
		try {
			this.closed = true;
			CompletableFuture<RedisConnection> current = this.connection;
			if (current != null) {
				current.thenAccept(RedisConnection::closeAsync);
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
