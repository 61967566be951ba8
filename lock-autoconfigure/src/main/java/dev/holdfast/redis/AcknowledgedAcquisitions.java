package dev.holdfast.redis;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Supplier;

import io.lettuce.core.RedisClient;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import org.jspecify.annotations.Nullable;

import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.script.RedisScript;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;

import static dev.holdfast.redis.RedisCalls.failure;

/**
 * Acquisitions that replicas must acknowledge ({@link ReplicaAcks}), on a
 * standalone or Sentinel {@link LettuceConnectionFactory}: each runs the acquire script and then
 * {@code WAIT} on a connection of its own. {@code WAIT} counts the replicas that have the writes
 * of the connection it runs on, so both go on one connection; and Redis answers nothing else on a
 * connection until its {@code WAIT} returns, so that connection is never the one the factory
 * shares with the application (its commands, renewals, releases and other acquisitions would
 * wait behind every {@code WAIT}).
 * <ul>
 * <li>At most {@value #MAX_CONNECTIONS} such connections, opened from the factory's Lettuce client
 * (its address, credentials, database and options) when every open one is busy, on a thread of
 * their own that ends when idle, and kept until {@link #close()}.</li>
 * <li>An acquisition that finds them all busy waits for one, at most the command timeout; at most
 * {@value #MAX_WAITING} wait, later ones fail at once.</li>
 * <li>A connection on which a command failed or timed out is closed, never handed out again.</li>
 * <li>Nothing blocks the calling thread: the returned stage completes on a Lettuce I/O thread
 * (or the connecting thread), each command bounded by the command timeout.</li>
 * </ul>
 */
final class AcknowledgedAcquisitions implements AutoCloseable {

	static final int MAX_CONNECTIONS = 4;

	static final int MAX_WAITING = 1024;

	private final LettuceConnectionFactory factory;

	private final ReplicaAcks acks;

	private final ThreadPoolExecutor connecting;

	private final Object lock = new Object();

	// Guarded by lock. open counts idle, handed-out and connecting connections.
	private final ArrayDeque<StatefulRedisConnection<byte[], byte[]>> idle = new ArrayDeque<>();

	private final ArrayDeque<CompletableFuture<StatefulRedisConnection<byte[], byte[]>>> waiting = new ArrayDeque<>();

	private int open;

	/** Of {@link #open}, those still being opened. */
	private int opening;

	private boolean closed;

	private AcknowledgedAcquisitions(LettuceConnectionFactory factory, ReplicaAcks acks) {
		this.factory = factory;
		this.acks = acks;
		// Every task is the same (open one connection, hand it to the first waiting acquisition),
		// so their order, which a plain executor may change as its idle thread ends, does not matter.
		this.connecting = new ThreadPoolExecutor(1, 1, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), (task) -> {
			Thread thread = new Thread(task, "holdfast-redis-ack-connect");
			thread.setDaemon(true);
			return thread;
		});
		this.connecting.allowCoreThreadTimeOut(true);
	}

	/**
	 * Acquisitions on connections of their own for a standalone or Sentinel Lettuce factory, or
	 * {@code null} for any other factory, whose connections are the caller's alone already
	 * (Jedis) or on which replicas cannot be awaited (Redis Cluster).
	 */
	static @Nullable AcknowledgedAcquisitions of(RedisConnectionFactory factory, ReplicaAcks acks) {
		if (factory instanceof LettuceConnectionFactory lettuce && !lettuce.isClusterAware()) {
			return new AcknowledgedAcquisitions(lettuce, acks);
		}
		return null;
	}

	/**
	 * Runs the acquire script; if it took the lock, {@code WAIT}s for the replicas on the same
	 * connection; if fewer acknowledged it in time, releases it there and fails (the shortfall
	 * as a {@link LockBackendException}). Any other failure also completes the stage with a
	 * {@link LockBackendException}.
	 */
	CompletableFuture<AcquireResult> acquire(String key, byte[][] keys, byte[][] args, byte[][] releaseKeys,
			byte[][] releaseArgs) {
		return acquire(RedisScripts.ACQUIRE, key, keys, args, releaseKeys, releaseArgs);
	}

	/**
	 * {@link #acquire} with {@code script} as the acquire script (the read hold's too: RED-6); with
	 * {@code releaseKeys} {@code null} a shortfall releases nothing (a read hold's: RWL-28).
	 */
	CompletableFuture<AcquireResult> acquire(RedisScript<Long> script, String key, byte[][] keys, byte[][] args,
			byte @Nullable [][] releaseKeys, byte @Nullable [][] releaseArgs) {
		CompletableFuture<AcquireResult> result = new CompletableFuture<>();
		borrow().whenComplete((connection, ex) -> {
			if (ex != null) {
				result.completeExceptionally(busy(key, ex));
			}
			else if (result.isDone()) {
				// The caller gave up (interrupted) while waiting for a connection: send nothing.
				giveBack(connection);
			}
			else {
				attempt(script, key, connection, keys, args, releaseKeys, releaseArgs, result);
			}
		});
		return result;
	}

	/** Waits for an acquisition on a connection of its own; an interrupt gives up waiting. */
	static AcquireResult await(String key, CompletableFuture<AcquireResult> acquisition) {
		try {
			return acquisition.get();
		}
		catch (InterruptedException ex) {
			// Not sent yet: it never will be; else the engine releases what it may have taken.
			acquisition.cancel(false);
			Thread.currentThread().interrupt();
			throw failure("acquire", key, ex);
		}
		catch (ExecutionException ex) {
			throw failure("acquire", key, ex.getCause());
		}
	}

	private void attempt(RedisScript<Long> script, String key, StatefulRedisConnection<byte[], byte[]> connection,
			byte[][] keys, byte[][] args, byte @Nullable [][] releaseKeys, byte @Nullable [][] releaseArgs,
			CompletableFuture<AcquireResult> result) {
		call(() -> evalsha(connection, script, keys, args)).whenComplete((reply, ex) -> {
			AcquireResult answer;
			try {
				answer = LockScriptCalls.acquireResult(key, reply);
			}
			catch (RuntimeException unexpected) {
				finish(connection, ex == null, result, null, failure("acquire", key, (ex != null) ? ex : unexpected));
				return;
			}
			if (!answer.acquired()) {
				finish(connection, true, result, answer, null);
				return;
			}
			awaitReplicas(key, connection, answer, releaseKeys, releaseArgs, result);
		});
	}

	private void awaitReplicas(String key, StatefulRedisConnection<byte[], byte[]> connection, AcquireResult acquired,
			byte @Nullable [][] releaseKeys, byte @Nullable [][] releaseArgs, CompletableFuture<AcquireResult> result) {
		int replicas = this.acks.replicas();
		call(() -> connection.async().waitForReplication(replicas, this.acks.timeout().toMillis()))
			.whenComplete((acknowledged, waitFailure) -> {
				if (waitFailure == null && acknowledged != null && acknowledged >= replicas) {
					finish(connection, true, result, acquired, null);
					return;
				}
				if (releaseKeys == null || releaseArgs == null) {
					LockBackendException shortfall = this.acks.shortfall(key, (acknowledged != null) ? acknowledged : -1);
					if (waitFailure != null) {
						shortfall.addSuppressed(waitFailure);
					}
					finish(connection, waitFailure == null, result, null, shortfall);
					return;
				}
				// Behind the WAIT on this connection, which keeps the order of its commands;
				// owner-checked, so it cannot touch a later holder's lock even when it runs late.
				call(() -> evalsha(connection, RedisScripts.RELEASE, releaseKeys, releaseArgs))
					.whenComplete((released, releaseFailure) -> {
						LockBackendException shortfall = this.acks.shortfall(key,
								(acknowledged != null) ? acknowledged : -1,
								(releaseFailure != null) ? null : LockScriptCalls.released(released));
						if (waitFailure != null) {
							shortfall.addSuppressed(waitFailure);
						}
						finish(connection, waitFailure == null && releaseFailure == null, result, null, shortfall);
					});
			});
	}

	/** Gives the connection back (or closes it when a command on it failed), then completes. */
	private void finish(StatefulRedisConnection<byte[], byte[]> connection, boolean healthy,
			CompletableFuture<AcquireResult> result, @Nullable AcquireResult answer,
			@Nullable LockBackendException failure) {
		if (healthy) {
			giveBack(connection);
		}
		else {
			discard(connection);
		}
		if (failure != null) {
			result.completeExceptionally(failure);
		}
		else {
			result.complete(answer);
		}
	}

	private LockBackendException busy(String key, Throwable ex) {
		Throwable cause = (ex instanceof CompletionException && ex.getCause() != null) ? ex.getCause() : ex;
		if (cause instanceof TimeoutException) {
			int busy;
			int opening;
			synchronized (this.lock) {
				opening = this.opening;
				busy = this.open - opening;
			}
			// True either way: a first connection (or one after a failure) may still be opening.
			return new LockBackendException("Redis acquire of lock '" + key + "': no connection for acquisitions that"
					+ " replicas acknowledge was free within the command timeout (" + this.factory.getTimeout() + "ms): "
					+ busy + " open and busy" + ((opening > 0) ? ", " + opening + " still being opened" : ""), null);
		}
		return failure("acquire", key, cause);
	}

	/** The script by SHA, again in full on NOSCRIPT. */
	private static CompletableFuture<Object> evalsha(StatefulRedisConnection<byte[], byte[]> connection,
			RedisScript<?> script, byte[][] keys, byte[][] args) {
		RedisAsyncCommands<byte[], byte[]> commands = connection.async();
		CompletableFuture<Object> reply = new CompletableFuture<>();
		LettuceScripts.<Object>evalsha(commands, script, ScriptOutputType.INTEGER, keys, args)
			.whenComplete((value, ex) -> {
				if (ex == null || !RedisCalls.isNoScript(ex)) {
					complete(reply, value, ex);
					return;
				}
				// Redis lost its script cache (restart, SCRIPT FLUSH): EVAL caches it again.
				commands.<Object>eval(LettuceScripts.source(script), ScriptOutputType.INTEGER, keys, args)
					.whenComplete((again, failure) -> complete(reply, again, failure));
			});
		return reply;
	}

	/**
	 * The command's reply, or its failure, also when sending it throws; bounded by the command
	 * timeout. The stage completes on a Lettuce I/O thread or the timer's.
	 */
	private <T> CompletableFuture<T> call(Supplier<? extends CompletionStage<T>> command) {
		CompletableFuture<T> reply;
		try {
			reply = command.get().toCompletableFuture();
		}
		catch (RuntimeException ex) {
			return CompletableFuture.failedFuture(ex);
		}
		return reply.orTimeout(this.factory.getTimeout(), TimeUnit.MILLISECONDS);
	}

	private static <T> void complete(CompletableFuture<T> future, @Nullable T value, @Nullable Throwable ex) {
		if (ex != null) {
			future.completeExceptionally(ex);
		}
		else {
			future.complete(value);
		}
	}

	/**
	 * An idle connection at once, else a stage that completes when one is given back or opened;
	 * fails after the command timeout, when {@value #MAX_WAITING} wait already, or when closed.
	 */
	private CompletableFuture<StatefulRedisConnection<byte[], byte[]>> borrow() {
		CompletableFuture<StatefulRedisConnection<byte[], byte[]>> borrowed = new CompletableFuture<>();
		boolean connect = false;
		synchronized (this.lock) {
			if (this.closed) {
				return CompletableFuture.failedFuture(new IllegalStateException("The Redis lock backend is closed"));
			}
			StatefulRedisConnection<byte[], byte[]> connection = this.idle.pollFirst();
			if (connection != null) {
				return CompletableFuture.completedFuture(connection);
			}
			if (this.waiting.size() >= MAX_WAITING) {
				return CompletableFuture.failedFuture(new IllegalStateException(
						MAX_WAITING + " acquisitions wait already for a connection on which replicas are awaited"));
			}
			this.waiting.addLast(borrowed);
			connect = countsOneMore();
		}
		if (connect) {
			connect();
		}
		borrowed.orTimeout(this.factory.getTimeout(), TimeUnit.MILLISECONDS).whenComplete((connection, ex) -> {
			if (ex != null) {
				synchronized (this.lock) {
					this.waiting.remove(borrowed);
				}
			}
		});
		return borrowed;
	}

	/**
	 * Under {@link #lock}: counts a connection to open, open and still being opened, if the bound
	 * allows one more; the caller then {@linkplain #connect connects}.
	 */
	private boolean countsOneMore() {
		if (this.open >= MAX_CONNECTIONS) {
			return false;
		}
		this.open++;
		this.opening++;
		return true;
	}

	/** Opens one connection on the connecting thread; {@link #countsOneMore} already counted it. */
	private void connect() {
		try {
			this.connecting.execute(() -> {
				StatefulRedisConnection<byte[], byte[]> connection;
				try {
					connection = ((RedisClient) this.factory.getRequiredNativeClient())
						.connect(ByteArrayCodec.INSTANCE);
				}
				catch (RuntimeException ex) {
					connectFailed(RedisCalls.hasMessage(ex, "RedisURI is not available") ? noAddress(ex) : ex);
					return;
				}
				synchronized (this.lock) {
					this.opening--;
				}
				giveBack(connection);
			});
		}
		catch (RejectedExecutionException ex) {
			connectFailed(new IllegalStateException("The Redis lock backend is closed", ex));
		}
	}

	private static IllegalStateException noAddress(RuntimeException ex) {
		IllegalStateException failure = new IllegalStateException("Replicas cannot be awaited through a connection "
				+ "factory whose Lettuce client has no address of its own (static master/replica): use a standalone "
				+ "or Sentinel configuration, or holdfast.redis.replicas-to-ack=0");
		failure.addSuppressed(ex);
		return failure;
	}

	/** Redis refuses new connections: every waiting acquisition fails now, not after its timeout. */
	private void connectFailed(RuntimeException ex) {
		List<CompletableFuture<StatefulRedisConnection<byte[], byte[]>>> failed;
		synchronized (this.lock) {
			this.open--;
			this.opening--;
			failed = new ArrayList<>(this.waiting);
			this.waiting.clear();
		}
		failed.forEach((borrowed) -> borrowed.completeExceptionally(ex));
	}

	/** Hands a healthy connection to the first acquisition still waiting, else keeps it idle. */
	private void giveBack(StatefulRedisConnection<byte[], byte[]> connection) {
		while (true) {
			CompletableFuture<StatefulRedisConnection<byte[], byte[]>> next;
			synchronized (this.lock) {
				if (this.closed) {
					this.open--;
					break;
				}
				next = this.waiting.pollFirst();
				if (next == null) {
					this.idle.addFirst(connection);
					return;
				}
			}
			if (next.complete(connection)) {
				return;
			}
			// That one timed out meanwhile: the next.
		}
		connection.closeAsync();
	}

	/** Closes a connection whose state is unknown; opens another one if acquisitions wait. */
	private void discard(StatefulRedisConnection<byte[], byte[]> connection) {
		boolean connect = false;
		synchronized (this.lock) {
			this.open--;
			if (!this.closed && !this.waiting.isEmpty()) {
				connect = countsOneMore();
			}
		}
		connection.closeAsync();
		if (connect) {
			connect();
		}
	}

	/**
	 * Closes the idle connections, and every other one when it is given back; acquisitions that
	 * wait for a connection fail, later ones are refused.
	 */
	@Override
	public void close() {
		List<StatefulRedisConnection<byte[], byte[]>> idleConnections;
		List<CompletableFuture<StatefulRedisConnection<byte[], byte[]>>> failed;
		synchronized (this.lock) {
			if (this.closed) {
				return;
			}
			this.closed = true;
			idleConnections = new ArrayList<>(this.idle);
			this.open -= idleConnections.size();
			this.idle.clear();
			failed = new ArrayList<>(this.waiting);
			this.waiting.clear();
		}
		this.connecting.shutdown();
		IllegalStateException closedNow = new IllegalStateException("The Redis lock backend is closed");
		failed.forEach((borrowed) -> borrowed.completeExceptionally(closedNow));
		idleConnections.forEach(StatefulRedisConnection::closeAsync);
	}

}
