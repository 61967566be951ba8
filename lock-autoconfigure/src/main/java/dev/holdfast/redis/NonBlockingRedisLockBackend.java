package dev.holdfast.redis;

import java.time.Duration;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.BiConsumer;

import org.jspecify.annotations.Nullable;

import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.script.RedisScript;
import org.springframework.util.Assert;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLeaseRenewal;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.HeldLock;

import static dev.holdfast.redis.LockScriptCalls.acquireKeys;
import static dev.holdfast.redis.LockScriptCalls.acquireResult;
import static dev.holdfast.redis.LockScriptCalls.complete;
import static dev.holdfast.redis.LockScriptCalls.releaseKeys;
import static dev.holdfast.redis.LockScriptCalls.released;
import static dev.holdfast.redis.RedisCalls.failure;

/**
 * The backend with its non-blocking ability, on a Lettuce factory's shared connection: see
 * {@link RedisLockBackend#of}.
 */
final class NonBlockingRedisLockBackend extends RedisLockBackend implements AsyncLockBackend, AsyncLeaseRenewal {

	private final LettuceScripts scripts;

	NonBlockingRedisLockBackend(RedisConnectionFactory connectionFactory, String channel, ReplicaAcks acks,
			LettuceScripts scripts) {
		super(connectionFactory, channel, acks);
		this.scripts = scripts;
	}

	/**
	 * {@code PING} as {@link RedisLockBackend#checkHealth()}, then the scripts fetch the shared
	 * connection it used: the first non-blocking call after the startup probe needs no timer of
	 * its own (RED-9).
	 */
	@Override
	public Check checkHealth() {
		Check check = super.checkHealth();
		this.scripts.connect();
		return check;
	}

	/** Whether a non-blocking call now goes straight to the connection, timed by Lettuce alone. */
	boolean timedByLettuce() {
		return this.scripts.timedByLettuce();
	}

	/** Blocking calls, too, go straight to the shared Lettuce connection. */
	@Override
	<T> T eval(RedisScript<?> script, ReturnType type, byte[][] keys, byte[][] args) {
		return this.scripts.eval(script, type, keys, args);
	}

	/**
	 * {@link #tryAcquire} in one round trip without blocking; the stage completes on a Lettuce
	 * I/O thread, or fails with {@link LockBackendException} on a Redis error or after the
	 * factory's command timeout.
	 */
	@Override
	public CompletionStage<AcquireResult> tryAcquireAsync(String key, String owner, Duration ttl) {
		return acquireAsync(key, owner, ttl, null);
	}

	/** {@link #tryAcquireWaiting} in one round trip without blocking; failures as for {@link #tryAcquireAsync}. */
	@Override
	public CompletionStage<AcquireResult> tryAcquireWaitingAsync(String key, String owner, Duration ttl,
			Duration recordFor) {
		return acquireAsync(key, owner, ttl, recordFor);
	}

	private CompletionStage<AcquireResult> acquireAsync(String key, String owner, Duration ttl,
			@Nullable Duration recordFor) {
		try {
			byte[][] keys = acquireKeys(key);
			byte[][] args = this.calls.acquireArguments(owner, ttl, recordFor);
			if (replicaAcks().replicas() > 0) {
				Assert.state(this.acknowledged != null, "No connections on which replicas are awaited");
				return this.acknowledged.acquire(key, keys, args, releaseKeys(key),
						this.calls.releaseArguments(owner, null));
			}
			return complete(this.scripts.<Long>evalAsync(RedisScripts.ACQUIRE, ReturnType.INTEGER, keys, args),
					"acquire", key, (reply) -> acquireResult(key, reply));
		}
		catch (RuntimeException ex) {
			return CompletableFuture.failedFuture(ex);
		}
	}

	/**
	 * {@link #renew} without blocking, on the shared Lettuce connection; failures as for
	 * {@link #tryAcquireAsync}.
	 */
	@Override
	public CompletionStage<Set<String>> renewAsync(Collection<HeldLock> locks) {
		return this.renewal.renewAsync(this.scripts, locks);
	}

	/** {@link #withdraw} in one round trip without blocking, behind this process's attempts on the shared connection. */
	@Override
	public CompletionStage<Boolean> withdrawAsync(String key, String owner) {
		return releaseAsync(RedisScripts.WITHDRAW, key, owner);
	}

	/**
	 * {@link #release} in one round trip without blocking; failures as for
	 * {@link #tryAcquireAsync}.
	 */
	@Override
	public CompletionStage<Boolean> releaseAsync(String key, String owner) {
		return releaseAsync(RedisScripts.RELEASE, key, owner);
	}

	/** One callback on Lettuce's reply, no stage of its own. */
	@Override
	public void releaseAsync(String key, String owner,
			BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
		releaseAsync(RedisScripts.RELEASE, key, owner, null, whenAnswered);
	}

	/** One callback on Lettuce's reply, as the release without a next local waiter. */
	@Override
	public void releaseAsync(String key, String owner, @Nullable String nextLocal,
			BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
		releaseAsync(RedisScripts.RELEASE, key, owner, nextLocal, whenAnswered);
	}

	private CompletionStage<Boolean> releaseAsync(RedisScript<Long> script, String key, String owner) {
		CompletableFuture<Boolean> result = new CompletableFuture<>();
		releaseAsync(script, key, owner, null, (released, ex) -> {
			if (ex == null) {
				result.complete(released);
			}
			else {
				result.completeExceptionally(ex);
			}
		});
		return result;
	}

	/**
	 * {@link #release} (or {@link #withdraw}, by {@code script}): the outcome, or the failure as a
	 * {@code LockBackendException}, handed to {@code whenAnswered}; one callback on Lettuce's reply.
	 */
	private void releaseAsync(RedisScript<Long> script, String key, String owner, @Nullable String nextLocal,
			BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
		byte[][] keys;
		byte[][] args;
		try {
			keys = releaseKeys(key);
			args = this.calls.releaseArguments(owner, nextLocal);
		}
		catch (RuntimeException ex) {
			whenAnswered.accept(null, ex);
			return;
		}
		this.scripts.<Long>evalAsync(script, ReturnType.INTEGER, keys, args, (reply, ex) -> {
			if (ex != null) {
				whenAnswered.accept(null, failure((script == RedisScripts.RELEASE) ? "release" : "withdraw", key, ex));
				return;
			}
			whenAnswered.accept(released(reply), null);
		});
	}

}
