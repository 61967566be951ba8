package dev.holdfast.redis;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Predicate;

import io.lettuce.core.LettuceFutures;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.async.RedisAsyncCommands;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.ByteArrayCodec;
import io.lettuce.core.output.IntegerOutput;
import io.lettuce.core.protocol.CommandType;
import org.jspecify.annotations.Nullable;

import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.connection.lettuce.LettuceConnection;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.script.RedisScript;

/**
 * Runs the backend's scripts directly on the Lettuce connection that a
 * {@link LettuceConnectionFactory} shares between all its users, without blocking or blocking
 * the caller until the reply, without spring-data-redis's per-call connection objects in
 * between. Only for a standalone or Sentinel factory that shares its native connection; loaded
 * only when Lettuce is on the classpath.
 */
final class LettuceScripts {

	private final LettuceConnectionFactory factory;

	private final Predicate<@Nullable Throwable> isNoScript;

	// The factory's shared connection, fetched on first use and again after any failure (the
	// factory may have replaced it); Lettuce reconnects it by itself after Redis restarts.
	private volatile @Nullable RedisClusterAsyncCommands<byte[], byte[]> commands;

	/**
	 * Whether Lettuce itself fails the shared connection's commands after a timeout (its
	 * {@code TimeoutOptions}, on by default since Lettuce 6.1), read from the connection.
	 */
	private volatile boolean commandsTimeOut;

	private LettuceScripts(LettuceConnectionFactory factory, Predicate<@Nullable Throwable> isNoScript) {
		this.factory = factory;
		this.isNoScript = isNoScript;
	}

	/** Scripts on the factory's shared native connection, or {@code null} if it has none. */
	static @Nullable LettuceScripts of(RedisConnectionFactory factory, Predicate<@Nullable Throwable> isNoScript) {
		if (factory instanceof LettuceConnectionFactory lettuce && lettuce.getShareNativeConnection()
				&& !lettuce.isClusterAware()) {
			return new LettuceScripts(lettuce, isNoScript);
		}
		return null;
	}

	/**
	 * Runs the script by SHA, sending it again on NOSCRIPT, without blocking: the returned future
	 * completes on a Lettuce I/O thread, or with a timeout after the factory's command timeout.
	 * When the shared connection exists (every call but the first, or the first after a failure),
	 * the command is written to it before this method returns, so a command sent afterwards on
	 * the connection runs after it in Redis.
	 */
	<T> CompletableFuture<T> evalAsync(RedisScript<?> script, ReturnType type, byte[][] keys, byte[]... args) {
		RedisClusterAsyncCommands<byte[], byte[]> current = this.commands;
		CompletableFuture<T> result;
		if (current != null) {
			result = send(current, script, type, keys, args);
		}
		else {
			// Only the first call, or the first after a failure, may have to wait for the factory
			// (which connects if its shared connection does not exist yet): never on the caller's thread.
			result = CompletableFuture.supplyAsync(this::commands)
				.thenCompose((commands) -> send(commands, script, type, keys, args));
		}
		// Lettuce times commands out itself when its client options say so (spring-data-redis's
		// default): one timer less per call then.
		return this.commandsTimeOut ? result : result.orTimeout(this.factory.getTimeout(), TimeUnit.MILLISECONDS);
	}

	private <T> CompletableFuture<T> send(RedisClusterAsyncCommands<byte[], byte[]> commands, RedisScript<?> script,
			ReturnType type, byte[][] keys, byte[][] args) {
		CompletableFuture<T> result = new CompletableFuture<>();
		new ScriptCall<T>(script, outputType(type), keys, args, (value, ex) -> {
			if (ex == null) {
				result.complete(value);
			}
			else {
				result.completeExceptionally(ex);
			}
		}).send(commands);
		return result;
	}

	/**
	 * {@link #evalAsync(RedisScript, ReturnType, byte[][], byte[]...)} that hands the reply or
	 * Lettuce's failure to {@code whenDone} (once, on a Lettuce I/O thread or the caller's). Where
	 * the shared connection exists and Lettuce times its commands out (the usual case), this is one
	 * callback on Lettuce's reply, with no future of its own: the release after every locked call
	 * takes this path.
	 */
	<T> void evalAsync(RedisScript<?> script, ReturnType type, byte[][] keys, byte[][] args,
			BiConsumer<? super @Nullable T, ? super @Nullable Throwable> whenDone) {
		RedisClusterAsyncCommands<byte[], byte[]> current = this.commands;
		if (current == null || !this.commandsTimeOut) {
			this.<T>evalAsync(script, type, keys, args).whenComplete(whenDone);
			return;
		}
		new ScriptCall<T>(script, outputType(type), keys, args, whenDone).send(current);
	}

	/**
	 * One script call in flight: {@code EVALSHA}, {@code EVAL} again on NOSCRIPT, the connection
	 * forgotten after any other failure; the reply's only callback.
	 */
	private final class ScriptCall<T> implements BiConsumer<@Nullable T, @Nullable Throwable> {

		private final RedisScript<?> script;

		private final ScriptOutputType outputType;

		private final byte[][] keys;

		private final byte[][] args;

		private final BiConsumer<? super @Nullable T, ? super @Nullable Throwable> whenDone;

		private @Nullable RedisClusterAsyncCommands<byte[], byte[]> commands;

		private boolean sentInFull;

		ScriptCall(RedisScript<?> script, ScriptOutputType outputType, byte[][] keys, byte[][] args,
				BiConsumer<? super @Nullable T, ? super @Nullable Throwable> whenDone) {
			this.script = script;
			this.outputType = outputType;
			this.keys = keys;
			this.args = args;
			this.whenDone = whenDone;
		}

		void send(RedisClusterAsyncCommands<byte[], byte[]> commands) {
			this.commands = commands;
			RedisFuture<T> reply;
			try {
				reply = evalsha(commands, this.script, this.outputType, this.keys, this.args);
			}
			catch (RuntimeException ex) {
				accept(null, ex);
				return;
			}
			reply.whenComplete(this);
		}

		@Override
		public void accept(@Nullable T value, @Nullable Throwable ex) {
			RedisClusterAsyncCommands<byte[], byte[]> sentOn = this.commands;
			if (ex != null && sentOn != null) {
				if (!this.sentInFull && LettuceScripts.this.isNoScript.test(ex)) {
					// Redis lost its script cache (restart, SCRIPT FLUSH): EVAL caches it again.
					this.sentInFull = true;
					RedisFuture<T> again;
					try {
						again = sentOn.eval(source(this.script), this.outputType, this.keys, this.args);
					}
					catch (RuntimeException failure) {
						accept(null, failure);
						return;
					}
					again.whenComplete(this);
					return;
				}
				forget(sentOn);
			}
			this.whenDone.accept(value, ex);
		}

	}

	/**
	 * Runs the script by SHA, sending it again on NOSCRIPT, and waits for the reply at most the
	 * factory's command timeout.
	 * @throws RuntimeException Lettuce's exception for a Redis error, a timeout
	 * ({@code RedisCommandTimeoutException}) or an interruption (the thread's interrupt flag is
	 * set again)
	 */
	<T> T eval(RedisScript<?> script, ReturnType type, byte[][] keys, byte[]... args) {
		RedisClusterAsyncCommands<byte[], byte[]> commands = commands();
		ScriptOutputType outputType = outputType(type);
		try {
			try {
				return await(evalsha(commands, script, outputType, keys, args));
			}
			catch (RuntimeException ex) {
				if (!this.isNoScript.test(ex)) {
					throw ex;
				}
				// Redis lost its script cache (restart, SCRIPT FLUSH): EVAL caches it again.
				return await(commands.eval(source(script), outputType, keys, args));
			}
		}
		catch (RuntimeException ex) {
			forget(commands);
			throw ex;
		}
	}

	/**
	 * {@code EVALSHA} on {@code commands}; an integer script on a standalone connection goes with
	 * its arguments written straight to the wire ({@link ScriptArguments}).
	 */
	@SuppressWarnings("unchecked")
	static <T> RedisFuture<T> evalsha(RedisClusterAsyncCommands<byte[], byte[]> commands,
			RedisScript<?> script, ScriptOutputType type, byte[][] keys, byte[][] args) {
		if (type == ScriptOutputType.INTEGER && commands instanceof RedisAsyncCommands<byte[], byte[]> standalone) {
			return (RedisFuture<T>) standalone.dispatch(CommandType.EVALSHA,
					new IntegerOutput<>(ByteArrayCodec.INSTANCE), new ScriptArguments(script.getSha1(), keys, args));
		}
		return commands.evalsha(script.getSha1(), type, keys, args);
	}

	private <T> T await(RedisFuture<T> reply) {
		return LettuceFutures.awaitOrCancel(reply, this.factory.getTimeout(), TimeUnit.MILLISECONDS);
	}

	/**
	 * Fetches the factory's shared connection now unless known (the startup probe, after its
	 * {@code PING} opened it), so that the first non-blocking call already takes the path that
	 * Lettuce's command timeout bounds, with no timer of its own (RED-9). A failure is left to the
	 * next call, which fetches it again.
	 */
	void connect() {
		if (this.commands == null) {
			try {
				commands();
			}
			catch (RuntimeException ex) {
				// The next call fetches it, bounded as always.
			}
		}
	}

	/** Whether a non-blocking call now goes straight to the connection, timed by Lettuce alone. */
	boolean timedByLettuce() {
		return this.commands != null && this.commandsTimeOut;
	}

	private RedisClusterAsyncCommands<byte[], byte[]> commands() {
		RedisClusterAsyncCommands<byte[], byte[]> current = this.commands;
		if (current == null) {
			try (RedisConnection connection = this.factory.getConnection()) {
				current = ((LettuceConnection) connection).getNativeConnection();
			}
			this.commandsTimeOut = timesOut(current);
			this.commands = current;
		}
		return current;
	}

	private static boolean timesOut(RedisClusterAsyncCommands<byte[], byte[]> commands) {
		if (!(commands instanceof RedisAsyncCommands<byte[], byte[]> standalone)) {
			return false;
		}
		TimeoutOptions timeouts = standalone.getStatefulConnection().getOptions().getTimeoutOptions();
		return timeouts.isTimeoutCommands() && (timeouts.isApplyConnectionTimeout() || timeouts.getSource() != null);
	}

	private void forget(RedisClusterAsyncCommands<byte[], byte[]> failed) {
		if (this.commands == failed) {
			this.commands = null;
		}
	}

	static byte[] source(RedisScript<?> script) {
		return script.getScriptAsString().getBytes(StandardCharsets.UTF_8);
	}

	private static ScriptOutputType outputType(ReturnType type) {
		return switch (type) {
			case MULTI -> ScriptOutputType.MULTI;
			case INTEGER -> ScriptOutputType.INTEGER;
			case BOOLEAN -> ScriptOutputType.BOOLEAN;
			case STATUS -> ScriptOutputType.STATUS;
			case VALUE -> ScriptOutputType.VALUE;
		};
	}

}
