package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.jspecify.annotations.Nullable;

import org.springframework.data.redis.connection.ClusterSlotHashUtil;
import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.util.Assert;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;

import static dev.holdfast.redis.LockScriptCalls.sharedKeys;
import static dev.holdfast.redis.RedisCalls.bytes;
import static dev.holdfast.redis.RedisCalls.checkOwner;
import static dev.holdfast.redis.RedisCalls.evalSha;
import static dev.holdfast.redis.RedisCalls.failure;
import static dev.holdfast.redis.RedisCalls.fenceKey;
import static dev.holdfast.redis.RedisCalls.hasMessage;
import static dev.holdfast.redis.RedisCalls.lockKey;
import static dev.holdfast.redis.RedisCalls.ownerBytes;
import static dev.holdfast.redis.RedisCalls.readersKey;
import static dev.holdfast.redis.RedisCalls.ttlMillis;

/**
 * The read holds of a {@link RedisLockBackend} (decision 0048, rules RWL-20 to RWL-28):
 * <ul>
 * <li>While read-held, the lock {@code {<key>}} holds {@code ~readers} (owners never start with
 * {@code ~}), expiring with the latest live reader entry; every exclusive attempt is refused by
 * it as by any holder, at no cost of its own.</li>
 * <li>Each reader is an entry {@code <generation>:<owner>} of the sorted set
 * {@code {<key>}:readers}, scored with the Redis time in ms at which it expires; the generation is
 * the fence when the group formed, which no write changes while the group lives. Forming a group
 * from a free lock deletes older entries first; a forced release deletes the set.</li>
 * <li>A live record of a waiting writer in {@code {<key>}:waiters} refuses every reader (writer
 * preference); a refused reader that waits records itself in {@code {<key>}:readwait}, so that
 * a release or withdrawal leaving no writer waiting publishes the plain release {@code {<key>}}.</li>
 * <li>The reader's token is the fence, at least the latest write's and below every later write's;
 * where the fence is gone the group's first reader stores one from Redis's clock.</li>
 * <li>{@code RELEASE} finds a reader's entry by owner; the last reader's release runs the handoff of
 * the lock (a reservation for a recorded writer). {@code RENEW_SHARED} reads {@code TIME}: one
 * script call per hash slot on Cluster, per {@value #RENEW_CHUNK} holds otherwise.</li>
 * </ul>
 */
final class RedisSharedLocks {

	/** Holds per renewal script on a standalone Redis (three keys each). */
	private static final int RENEW_CHUNK = 3_000;

	private final RedisLockBackend backend;

	private final RedisConnectionFactory connectionFactory;

	RedisSharedLocks(RedisLockBackend backend, RedisConnectionFactory connectionFactory) {
		this.backend = backend;
		this.connectionFactory = connectionFactory;
	}

	/** See {@link dev.holdfast.spi.SharedLocks#tryAcquireShared}; replicas awaited as for an acquisition (RED-6). */
	AcquireResult tryAcquireShared(String key, String owner, Duration ttl, Duration recordFor) {
		Assert.notNull(recordFor, "'recordFor' must not be null");
		if (recordFor.isNegative()) {
			throw new IllegalArgumentException("Reader record duration must not be negative, was " + recordFor);
		}
		byte[][] args = this.backend.calls.acquireArguments(owner, ttl, recordFor.isZero() ? null : recordFor);
		return this.backend.acquire(RedisScripts.ACQUIRE_SHARED, key, owner, sharedKeys(key), args);
	}

	/** See {@link dev.holdfast.spi.SharedLocks#renewShared}. */
	Set<String> renewShared(Collection<HeldLock> holds) {
		if (holds.isEmpty()) {
			return Set.of();
		}
		List<HeldLock> batch = new ArrayList<>(holds);
		for (HeldLock hold : batch) {
			lockKey(hold.key());
			checkOwner(hold.owner());
			ttlMillis(hold.ttl());
		}
		Set<String> renewed = new HashSet<>();
		try (RedisConnection connection = this.connectionFactory.getConnection()) {
			List<List<HeldLock>> groups = new ArrayList<>();
			if (connection instanceof RedisClusterConnection) {
				Map<Integer, List<HeldLock>> bySlot = new LinkedHashMap<>();
				for (HeldLock hold : batch) {
					bySlot.computeIfAbsent(ClusterSlotHashUtil.calculateSlot(lockKey(hold.key())),
							(slot) -> new ArrayList<>()).add(hold);
				}
				groups.addAll(bySlot.values());
			}
			else {
				for (int from = 0; from < batch.size(); from += RENEW_CHUNK) {
					groups.add(batch.subList(from, Math.min(batch.size(), from + RENEW_CHUNK)));
				}
			}
			for (List<HeldLock> group : groups) {
				renewGroup(connection, group, renewed);
			}
			return renewed;
		}
		catch (RuntimeException ex) {
			throw failure("renewal of read holds of lock '" + batch.get(0).key() + "'"
					+ ((batch.size() > 1) ? " and " + (batch.size() - 1) + " more" : ""), ex);
		}
	}

	/**
	 * One script call for the group; while its slot moves to another node and its keys are split
	 * between the two ({@code TRYAGAIN}, RED-5), one call per hold, each followed where it is ({@code ASK}).
	 */
	private static void renewGroup(RedisConnection connection, List<HeldLock> group, Set<String> renewed) {
		try {
			collectRenewed(group, evalSha(connection, RedisScripts.RENEW_SHARED, ReturnType.MULTI, group.size() * 3,
					renewArguments(group)), renewed);
		}
		catch (RuntimeException ex) {
			if (group.size() == 1 || !hasMessage(ex, "TRYAGAIN")) {
				throw ex;
			}
			for (HeldLock hold : group) {
				List<HeldLock> one = List.of(hold);
				collectRenewed(one, evalSha(connection, RedisScripts.RENEW_SHARED, ReturnType.MULTI, 3,
						renewArguments(one)), renewed);
			}
		}
	}

	private static byte[][] renewArguments(List<HeldLock> holds) {
		int size = holds.size();
		byte[][] keysAndArgs = new byte[size * 5][];
		for (int i = 0; i < size; i++) {
			HeldLock hold = holds.get(i);
			keysAndArgs[3 * i] = lockKey(hold.key());
			keysAndArgs[3 * i + 1] = fenceKey(hold.key());
			keysAndArgs[3 * i + 2] = readersKey(hold.key());
			keysAndArgs[3 * size + 2 * i] = ownerBytes(hold.owner());
			keysAndArgs[3 * size + 2 * i + 1] = bytes(Long.toString(ttlMillis(hold.ttl())));
		}
		return keysAndArgs;
	}

	private static void collectRenewed(List<HeldLock> holds, @Nullable List<?> reply, Set<String> renewed) {
		if (reply == null) {
			throw new LockBackendException("Redis renewal of read holds gave no reply", null);
		}
		for (Object index : reply) {
			renewed.add(holds.get(((Number) index).intValue() - 1).key());
		}
	}

}
