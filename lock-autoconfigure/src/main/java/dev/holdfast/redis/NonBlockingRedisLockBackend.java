package dev.holdfast.redis;

import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.function.BiConsumer;

import org.jspecify.annotations.Nullable;

import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.script.RedisScript;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;

/**
 * The backend with its non-blocking ability, on a Lettuce factory's shared connection: see
 * {@link RedisLockBackend#of}.
 */
final class NonBlockingRedisLockBackend extends RedisLockBackend implements AsyncLockBackend {

	private final LettuceScripts scripts;

	NonBlockingRedisLockBackend(RedisConnectionFactory connectionFactory, String channel, ReplicaAcks acks,
			LettuceScripts scripts) {
		super(connectionFactory, channel, acks);
		this.scripts = scripts;
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
		return acquireAsync(this.scripts, key, owner, ttl, null);
	}

	/** {@link #tryAcquireWaiting} in one round trip without blocking; failures as for {@link #tryAcquireAsync}. */
	@Override
	public CompletionStage<AcquireResult> tryAcquireWaitingAsync(String key, String owner, Duration ttl,
			Duration recordFor) {
		return acquireAsync(this.scripts, key, owner, ttl, recordFor);
	}

	/** {@link #withdraw} in one round trip without blocking, behind this process's attempts on the shared connection. */
	@Override
	public CompletionStage<Boolean> withdrawAsync(String key, String owner) {
		return releaseAsync(this.scripts, RedisScripts.WITHDRAW, key, owner);
	}

	/**
	 * {@link #release} in one round trip without blocking; failures as for
	 * {@link #tryAcquireAsync}.
	 */
	@Override
	public CompletionStage<Boolean> releaseAsync(String key, String owner) {
		return releaseAsync(this.scripts, RedisScripts.RELEASE, key, owner);
	}

	/** One callback on Lettuce's reply, no stage of its own. */
	@Override
	public void releaseAsync(String key, String owner,
			BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
		releaseAsync(this.scripts, RedisScripts.RELEASE, key, owner, null, whenAnswered);
	}

	/** One callback on Lettuce's reply, as the release without a next local waiter. */
	@Override
	public void releaseAsync(String key, String owner, @Nullable String nextLocal,
			BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
		releaseAsync(this.scripts, RedisScripts.RELEASE, key, owner, nextLocal, whenAnswered);
	}

}
