package dev.holdfast.redis;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

import org.jspecify.annotations.Nullable;

import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.ReturnType;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.TickClaims.TickClaim;

import static dev.holdfast.redis.RedisCalls.bytes;
import static dev.holdfast.redis.RedisCalls.evalSha;
import static dev.holdfast.redis.RedisCalls.failure;
import static dev.holdfast.redis.RedisCalls.lockKey;
import static dev.holdfast.redis.RedisCalls.ttlMillis;

/**
 * Tick claims of the Redis backend: one {@link RedisScripts#CLAIM_TICK} call on {@code {<key>}:tick}
 * (see {@link RedisLockBackend#claimTick}).
 */
final class RedisTickClaims {

	/** Ids of tick claims, unique across instances. */
	private static final SecureRandom CLAIM_IDS = new SecureRandom();

	private final RedisConnectionFactory connectionFactory;

	RedisTickClaims(RedisConnectionFactory connectionFactory) {
		this.connectionFactory = connectionFactory;
	}

	TickClaim claimTick(String key, Instant tick, Duration tolerance, Duration ttl) {
		lockKey(key);
		byte[][] keys = { bytes("{" + key + "}:tick") };
		byte[][] args = { bytes(Long.toString(tick.toEpochMilli())), bytes(Long.toString(tolerance.toMillis())),
				bytes(Long.toString(ttlMillis(ttl))), bytes(Long.toUnsignedString(CLAIM_IDS.nextLong())) };
		Object reply;
		try (RedisConnection connection = this.connectionFactory.getConnection()) {
			reply = evalSha(connection, RedisScripts.CLAIM_TICK, ReturnType.MULTI, keys, args);
		}
		catch (RuntimeException ex) {
			throw failure("tick claim", key, ex);
		}
		if (!(reply instanceof List<?> answer) || answer.size() != 2 || !(answer.get(0) instanceof Number outcome)
				|| !(answer.get(1) instanceof Number time)) {
			throw new LockBackendException("Redis answered the tick claim of '" + key + "' with " + reply, null);
		}
		return new TickClaim(switch (outcome.intValue()) {
			case 1 -> TickClaim.Outcome.CLAIMED;
			case 2 -> TickClaim.Outcome.NOT_DUE;
			default -> TickClaim.Outcome.TAKEN;
		}, Instant.ofEpochMilli(time.longValue()));
	}

	@Nullable Instant lastClaimedTick(String key) {
		lockKey(key);
		byte[] record;
		try (RedisConnection connection = this.connectionFactory.getConnection()) {
			record = connection.stringCommands().get(bytes("{" + key + "}:tick"));
		}
		catch (RuntimeException ex) {
			throw failure("tick record", key, ex);
		}
		if (record == null) {
			return null;
		}
		String text = new String(record, StandardCharsets.US_ASCII);
		int space = text.indexOf(' ');
		return Instant.ofEpochMilli(Long.parseLong((space > 0) ? text.substring(0, space) : text));
	}

}
