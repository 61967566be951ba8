package dev.holdfast.redis;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;

import org.jspecify.annotations.Nullable;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;

import static dev.holdfast.redis.RedisCalls.bytes;
import static dev.holdfast.redis.RedisCalls.failure;
import static dev.holdfast.redis.RedisCalls.fenceKey;
import static dev.holdfast.redis.RedisCalls.lockKey;
import static dev.holdfast.redis.RedisCalls.ownerBytes;
import static dev.holdfast.redis.RedisCalls.readWaitKey;
import static dev.holdfast.redis.RedisCalls.readersKey;
import static dev.holdfast.redis.RedisCalls.ttlMillis;
import static dev.holdfast.redis.RedisCalls.waitersKey;

/**
 * The keys and arguments of the lock scripts ({@link RedisScripts#ACQUIRE}, {@code RELEASE},
 * {@code WITHDRAW}), checked and encoded for one backend's channel, and their answers read.
 */
final class LockScriptCalls {

	private static final byte[] RESERVATION_WINDOW = bytes(Long.toString(RedisLockBackend.RESERVATION_WINDOW_MILLIS));

	private static final byte[] NOT_RECORDED = bytes("0");

	private static final byte[] EMPTY = new byte[0];

	private final byte[] channelBytes;

	/** The last record duration sent, encoded: the engine sends one per template. */
	private volatile TtlBytes lastRecord = new TtlBytes(-1, new byte[0]);

	/** The last time to live sent, encoded: applications use one or a few. */
	private volatile TtlBytes lastTtl = new TtlBytes(-1, new byte[0]);

	LockScriptCalls(String channel) {
		this.channelBytes = bytes(channel);
	}

	static byte[][] acquireKeys(String key) {
		return new byte[][] { lockKey(key), fenceKey(key), waitersKey(key) };
	}

	/** Owner, ttl and how long a refused attempt records its owner as a waiter ({@code null}: not at all). */
	byte[][] acquireArguments(String owner, Duration ttl, @Nullable Duration recordFor) {
		byte[] record = (recordFor != null) ? recordBytes(recordFor) : NOT_RECORDED;
		return new byte[][] { ownerBytes(owner), ttlBytes(ttlMillis(ttl)), record };
	}

	private byte[] recordBytes(Duration recordFor) {
		long millis = recordFor.toMillis();
		if (millis < 1) {
			throw new IllegalArgumentException("Waiter record duration must be at least 1ms, was " + recordFor);
		}
		TtlBytes last = this.lastRecord;
		if (last.millis() != millis) {
			last = new TtlBytes(millis, bytes(Long.toString(millis)));
			this.lastRecord = last;
		}
		return last.bytes();
	}

	private byte[] ttlBytes(long millis) {
		TtlBytes last = this.lastTtl;
		if (last.millis() != millis) {
			last = new TtlBytes(millis, bytes(Long.toString(millis)));
			this.lastTtl = last;
		}
		return last.bytes();
	}

	private record TtlBytes(long millis, byte[] bytes) {
	}

	/** The keys of {@code RELEASE} and {@code WITHDRAW}: the lock's, and its readers' (RWL-23). */
	static byte[][] releaseKeys(String key) {
		return new byte[][] { lockKey(key), waitersKey(key), readWaitKey(key), readersKey(key), fenceKey(key) };
	}

	/** The keys of {@link RedisScripts#ACQUIRE_SHARED}. */
	static byte[][] sharedKeys(String key) {
		return new byte[][] { lockKey(key), fenceKey(key), waitersKey(key), readersKey(key), readWaitKey(key) };
	}

	/**
	 * Owner, channel, the reservation window and the releasing process's next waiter ('' for
	 * none). The script draws a waiter by Redis TIME's microseconds, so a release allocates no
	 * random number.
	 */
	byte[][] releaseArguments(String owner, @Nullable String nextLocal) {
		return new byte[][] { ownerBytes(owner), this.channelBytes, RESERVATION_WINDOW,
				(nextLocal != null) ? ownerBytes(nextLocal) : EMPTY };
	}

	/** The acquire script's answer: see {@link RedisScripts#ACQUIRE}. */
	static AcquireResult acquireResult(String key, @Nullable Object reply) {
		if (!(reply instanceof Number number)) {
			throw new LockBackendException("Redis acquire of lock '" + key + "' gave an unexpected reply: " + reply,
					null);
		}
		long value = number.longValue();
		if (value > 0) {
			if (value >= RedisLockBackend.MAX_TOKEN) {
				throw new LockBackendException(
						"Redis acquire of lock '" + key + "' gave fencing token " + value + ", outside 1..2^53", null);
			}
			return AcquireResult.acquired(value);
		}
		return AcquireResult.held((value == 0) ? -1 : -1 - value);
	}

	/** RELEASE's and WITHDRAW's answer: 1 released (or reserved, or withdrawn), 0 not held. */
	static boolean released(@Nullable Object reply) {
		return reply instanceof Number number && number.longValue() == 1;
	}

	/** {@code reply} converted, or failed with a {@link LockBackendException} naming the operation and key. */
	static <T, R> CompletableFuture<R> complete(CompletableFuture<T> reply, String operation, String key,
			Function<@Nullable T, R> convert) {
		CompletableFuture<R> result = new CompletableFuture<>();
		reply.whenComplete((value, ex) -> {
			if (ex != null) {
				result.completeExceptionally(failure(operation, key, ex));
				return;
			}
			try {
				result.complete(convert.apply(value));
			}
			catch (RuntimeException conversionFailure) {
				result.completeExceptionally(failure(operation, key, conversionFailure));
			}
		});
		return result;
	}

}
