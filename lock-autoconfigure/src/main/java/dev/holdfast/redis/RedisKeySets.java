package dev.holdfast.redis;

import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.script.RedisScript;
import org.springframework.util.ClassUtils;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.KeySetAcquisition;
import dev.holdfast.spi.KeySetAcquisition.FirstTaken;

import static dev.holdfast.redis.RedisCalls.bytes;
import static dev.holdfast.redis.RedisCalls.failure;
import static dev.holdfast.redis.RedisCalls.fenceKey;
import static dev.holdfast.redis.RedisCalls.lockKey;
import static dev.holdfast.redis.RedisCalls.ownerBytes;
import static dev.holdfast.redis.RedisCalls.ttlMillis;

/**
 * The {@link KeySetAcquisition} of a {@link RedisLockBackend}: one {@link RedisScripts#ACQUIRE_ALL}
 * call for all locks, on a standalone or Sentinel Redis whose acquisitions no replica must
 * acknowledge. Not on Redis Cluster, where each lock's hash tag puts it in a slot of its own and one
 * script cannot reach them all; nor with replicas to acknowledge (RED-6), whose {@code WAIT} runs
 * per acquisition. Nor after Redis answered the script with an error (CROSSSLOT from a proxy in
 * front of a sharded Redis, a script refused): the batch is then off for this backend, and the
 * engine takes the keys one by one.
 */
final class RedisKeySets {

	private static final boolean LETTUCE_PRESENT = ClassUtils.isPresent("io.lettuce.core.RedisClient",
			RedisKeySets.class.getClassLoader());

	private static final boolean JEDIS_PRESENT = ClassUtils.isPresent("redis.clients.jedis.Jedis",
			RedisKeySets.class.getClassLoader());

	private static final Log logger = LogFactory.getLog(RedisLockBackend.class);

	/** Exceptions of an error reply, as Lettuce and Jedis raise them (not a transport failure or timeout). */
	private static final List<String> ERROR_REPLIES = List.of("io.lettuce.core.RedisCommandExecutionException",
			"redis.clients.jedis.exceptions.JedisDataException");

	private final AtomicBoolean offered;

	RedisKeySets(RedisConnectionFactory factory, ReplicaAcks acks) {
		this.offered = new AtomicBoolean(acks.replicas() == 0 && isSingleNode(factory));
	}

	/** Whether the factory is Lettuce's or Jedis's, and not for Redis Cluster: else not offered. */
	private static boolean isSingleNode(RedisConnectionFactory factory) {
		if (LETTUCE_PRESENT && factory instanceof LettuceConnectionFactory lettuce) {
			return !lettuce.isClusterAware();
		}
		return JEDIS_PRESENT && factory instanceof JedisConnectionFactory jedis && !jedis.isRedisClusterAware();
	}

	/** Whether {@code ex} is, or is caused by, an error reply of Redis. */
	private static boolean isErrorReply(Throwable ex) {
		for (Throwable current = ex; current != null; current = (current.getCause() != current) ? current.getCause()
				: null) {
			for (Class<?> type = current.getClass(); type != null; type = type.getSuperclass()) {
				if (ERROR_REPLIES.contains(type.getName())) {
					return true;
				}
			}
		}
		return false;
	}

	boolean offered() {
		return this.offered.get();
	}

	/** See {@link KeySetAcquisition#tryAcquireAll}; {@code backend} runs the script. */
	long @Nullable [] tryAcquireAll(RedisLockBackend backend, List<HeldLock> locks) {
		List<?> reply = run(backend, RedisScripts.ACQUIRE_ALL, locks);
		String first = locks.get(0).key();
		if (reply == null || reply.isEmpty()) {
			return null;
		}
		if (reply.size() != locks.size()) {
			throw new LockBackendException("Redis acquire of " + locks.size() + " locks from '" + first
					+ "' gave an unexpected reply: " + reply, null);
		}
		long[] tokens = new long[locks.size()];
		for (int i = 0; i < tokens.length; i++) {
			AcquireResult taken = LockScriptCalls.acquireResult(locks.get(i).key(), reply.get(i));
			if (!taken.acquired()) {
				throw new LockBackendException("Redis acquire of lock '" + locks.get(i).key()
						+ "' with " + (locks.size() - 1) + " others gave no fencing token: " + reply, null);
			}
			tokens[i] = taken.fencingToken();
		}
		return tokens;
	}

	/** See {@link KeySetAcquisition#tryAcquireFirst}; {@code backend} runs the script. */
	@Nullable FirstTaken tryAcquireFirst(RedisLockBackend backend, List<HeldLock> locks) {
		List<?> reply = run(backend, RedisScripts.ACQUIRE_FIRST, locks);
		if (reply == null || reply.isEmpty()) {
			return null;
		}
		int index = (reply.size() == 2 && reply.get(0) instanceof Long taken) ? taken.intValue() - 1 : -1;
		if (index < 0 || index >= locks.size()) {
			throw new LockBackendException("Redis acquire of the first free of " + locks.size() + " locks from '"
					+ locks.get(0).key() + "' gave an unexpected reply: " + reply, null);
		}
		AcquireResult taken = LockScriptCalls.acquireResult(locks.get(index).key(), reply.get(1));
		if (!taken.acquired()) {
			throw new LockBackendException("Redis acquire of lock '" + locks.get(index).key() + "' as the first free of "
					+ locks.size() + " gave no fencing token: " + reply, null);
		}
		return new FirstTaken(index, taken.fencingToken());
	}

	/**
	 * Runs {@code script} on the locks' keys and arguments: its reply, or {@code null} when Redis
	 * answered with an error reply other than the fencing limit (the script wrote nothing), which
	 * turns the batch off for this backend, or when the batch is off (on Redis Cluster, with replicas
	 * to acknowledge, or turned off by another call since the caller asked).
	 */
	private @Nullable List<?> run(RedisLockBackend backend, RedisScript<?> script, List<HeldLock> locks) {
		if (!this.offered.get()) {
			// never offered, or turned off by another call since this caller asked: "cannot after all"
			return null;
		}
		byte[][] keys = new byte[locks.size() * 2][];
		byte[][] args = new byte[locks.size() * 2][];
		for (int i = 0; i < locks.size(); i++) {
			HeldLock lock = locks.get(i);
			keys[2 * i] = lockKey(lock.key());
			keys[2 * i + 1] = fenceKey(lock.key());
			args[2 * i] = ownerBytes(lock.owner());
			args[2 * i + 1] = bytes(Long.toString(ttlMillis(lock.ttl())));
		}
		String first = locks.get(0).key();
		try {
			return backend.eval(script, ReturnType.MULTI, keys, args);
		}
		catch (RuntimeException ex) {
			if (isErrorReply(ex) && !RedisCalls.hasMessage(ex, "reached 2^53")) {
				// the script ran to no write (every check comes first) or not at all: nothing taken
				if (this.offered.compareAndSet(true, false)) {
					logger.info("Holdfast takes several keys one by one on this Redis from now on: it answered "
							+ "the script that takes them at once with an error (" + RedisCalls.failure("acquire", first, ex)
								.getMessage() + "); a proxy in front of a sharded Redis answers CROSSSLOT");
				}
				return null;
			}
			throw failure("acquire", first, ex);
		}
	}

}
