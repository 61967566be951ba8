package dev.holdfast.redis;

import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.script.RedisScript;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;

import static dev.holdfast.redis.LockScriptCalls.acquireResult;
import static dev.holdfast.redis.RedisCalls.bytes;
import static dev.holdfast.redis.RedisCalls.evalSha;
import static dev.holdfast.redis.RedisCalls.failure;

/**
 * The acquisition that replicas must acknowledge ({@link ReplicaAcks}, RED-6) where
 * {@link AcknowledgedAcquisitions} does not serve: on a factory whose connections are the caller's
 * alone already (Jedis), blocking. Kept apart from {@link AcknowledgedAcquisitions}, and free of
 * Lettuce types, so that an application without Lettuce never loads that class (its verification
 * needs Lettuce).
 */
final class BlockingAcknowledgedAcquisition {

	private BlockingAcknowledgedAcquisition() {
	}

	/**
	 * The acquire script, then, if it took the lock, {@code WAIT replicas timeout} on the same connection of the
	 * factory, which no other caller uses meanwhile (Jedis); refused on Cluster. A shortfall releases it through
	 * {@code backend} (not a read hold: RWL-28) and fails.
	 */
	static AcquireResult acquire(RedisLockBackend backend, RedisConnectionFactory connectionFactory,
			ReplicaAcks acks, RedisScript<Long> script, String key, String owner, byte[][] keys, byte[][] args) {
		AcquireResult result;
		long acknowledged;
		try (RedisConnection connection = connectionFactory.getConnection()) {
			if (connection instanceof RedisClusterConnection) {
				throw new LockBackendException("Redis acquire of lock '" + key + "': replicas cannot be awaited on "
						+ "Redis Cluster (holdfast.redis.replicas-to-ack must be 0 there)", null);
			}
			result = acquireResult(key, evalSha(connection, script, ReturnType.INTEGER, keys, args));
			if (!result.acquired()) {
				return result;
			}
			Object reply = connection.execute("WAIT", bytes(Integer.toString(acks.replicas())),
					bytes(Long.toString(acks.timeout().toMillis())));
			acknowledged = (reply instanceof Number number) ? number.longValue() : -1;
		}
		catch (RuntimeException ex) {
			throw failure("acquire", key, ex);
		}
		if (acknowledged >= acks.replicas()) {
			return result;
		}
		if (script == RedisScripts.ACQUIRE_SHARED) {
			throw acks.shortfall(key, acknowledged);
		}
		Boolean released;
		try {
			released = backend.release(key, owner);
		}
		catch (RuntimeException ex) {
			released = null;
		}
		throw acks.shortfall(key, acknowledged, released);
	}

}
