package dev.holdfast.redis;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import org.jspecify.annotations.Nullable;

import org.springframework.dao.InvalidDataAccessApiUsageException;
import org.springframework.data.redis.connection.ClusterSlotHashUtil;
import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisPipelineException;
import org.springframework.data.redis.connection.ReturnType;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.HeldLock;

import static dev.holdfast.redis.RedisCalls.bytes;
import static dev.holdfast.redis.RedisCalls.checkOwner;
import static dev.holdfast.redis.RedisCalls.evalSha;
import static dev.holdfast.redis.RedisCalls.failure;
import static dev.holdfast.redis.RedisCalls.hasMessage;
import static dev.holdfast.redis.RedisCalls.isNoScript;
import static dev.holdfast.redis.RedisCalls.lockKey;
import static dev.holdfast.redis.RedisCalls.ownerBytes;
import static dev.holdfast.redis.RedisCalls.ttlMillis;

/**
 * The batched renewal of a {@link RedisLockBackend}: one script call per 10,000 keys on a
 * standalone or Sentinel Redis, one per hash slot on Redis Cluster (pipelined where the
 * connection can, retried slot by slot while a slot moves).
 */
final class RedisRenewal {

	/** Keys per renewal script on a standalone Redis, so that one script never blocks Redis long. */
	private static final int RENEW_CHUNK = 10_000;

	private final RedisConnectionFactory connectionFactory;

	/**
	 * Whether this factory's cluster connections pipeline (Lettuce's do); turned off at the first
	 * renewal that finds they do not (Jedis's).
	 */
	private volatile boolean clusterPipelining = true;

	RedisRenewal(RedisConnectionFactory connectionFactory) {
		this.connectionFactory = connectionFactory;
	}

	/**
	 * Sets each lock's time to live where its owner still holds it: one script call on a
	 * standalone or Sentinel Redis (per 10,000 keys, so that one script never blocks Redis long),
	 * one script call per hash slot on Redis Cluster, pipelined where the connection can (Lettuce:
	 * the calls to one node travel together and the nodes answer in parallel), else one slot after
	 * the other (Jedis).
	 * @throws LockBackendException if Redis cannot be reached or answers with an error; which
	 * locks were renewed is unknown then
	 */
	Set<String> renew(Collection<HeldLock> locks) {
		if (locks.isEmpty()) {
			return Set.of();
		}
		List<HeldLock> batch = new ArrayList<>(locks);
		for (HeldLock lock : batch) {
			lockKey(lock.key());
			checkOwner(lock.owner());
			ttlMillis(lock.ttl());
		}
		try (RedisConnection connection = this.connectionFactory.getConnection()) {
			if (connection instanceof RedisClusterConnection) {
				return renewBySlot(connection, batch);
			}
			Set<String> renewed = new HashSet<>();
			for (int from = 0; from < batch.size(); from += RENEW_CHUNK) {
				List<HeldLock> chunk = batch.subList(from, Math.min(batch.size(), from + RENEW_CHUNK));
				List<?> reply = evalSha(connection, RedisScripts.RENEW, ReturnType.MULTI, chunk.size(), renewArguments(chunk));
				collectRenewed(chunk, reply, renewed);
			}
			return renewed;
		}
		catch (RuntimeException ex) {
			throw failure(describe(batch), ex);
		}
	}

	/**
	 * {@link #renew} on a standalone or Sentinel Redis through {@code scripts}, without blocking:
	 * the same script calls (one per 10,000 keys), all sent before this returns; the stage fails
	 * as {@link #renew} throws.
	 */
	CompletableFuture<Set<String>> renewAsync(LettuceScripts scripts, Collection<HeldLock> locks) {
		if (locks.isEmpty()) {
			return CompletableFuture.completedFuture(Set.of());
		}
		List<HeldLock> batch = new ArrayList<>(locks);
		List<List<HeldLock>> chunks = new ArrayList<>();
		List<CompletableFuture<List<?>>> replies = new ArrayList<>();
		try {
			for (HeldLock lock : batch) {
				lockKey(lock.key());
				checkOwner(lock.owner());
				ttlMillis(lock.ttl());
			}
			for (int from = 0; from < batch.size(); from += RENEW_CHUNK) {
				List<HeldLock> chunk = batch.subList(from, Math.min(batch.size(), from + RENEW_CHUNK));
				byte[][] keysAndArgs = renewArguments(chunk);
				chunks.add(chunk);
				replies.add(scripts.evalAsync(RedisScripts.RENEW, ReturnType.MULTI,
						Arrays.copyOfRange(keysAndArgs, 0, chunk.size()),
						Arrays.copyOfRange(keysAndArgs, chunk.size(), keysAndArgs.length)));
			}
		}
		catch (RuntimeException ex) {
			return CompletableFuture.failedFuture(failure(describe(batch), ex));
		}
		return CompletableFuture.allOf(replies.toArray(CompletableFuture[]::new)).handle((done, ex) -> {
			if (ex != null) {
				throw failure(describe(batch), (ex instanceof CompletionException) ? ex.getCause() : ex);
			}
			Set<String> renewed = new HashSet<>();
			for (int i = 0; i < chunks.size(); i++) {
				collectRenewed(chunks.get(i), replies.get(i).join(), renewed);
			}
			return renewed;
		});
	}

	private Set<String> renewBySlot(RedisConnection connection, List<HeldLock> locks) {
		Map<Integer, List<HeldLock>> bySlot = new LinkedHashMap<>();
		for (HeldLock lock : locks) {
			bySlot.computeIfAbsent(ClusterSlotHashUtil.calculateSlot(lockKey(lock.key())), (slot) -> new ArrayList<>())
				.add(lock);
		}
		List<List<HeldLock>> groups = new ArrayList<>(bySlot.values());
		Set<String> renewed = new HashSet<>();
		if (!this.clusterPipelining) {
			for (List<HeldLock> group : groups) {
				renewSlot(connection, group, renewed);
			}
			return renewed;
		}
		try {
			connection.openPipeline();
		}
		catch (InvalidDataAccessApiUsageException ex) {
			// This factory's cluster connections cannot pipeline (Jedis): from now on, renew one slot
			// after the other.
			this.clusterPipelining = false;
			return renewBySlot(connection, locks);
		}
		List<Object> replies;
		try {
			replies = pipelineRenew(connection, groups, false);
		}
		catch (RedisPipelineException ex) {
			if (!isNoScript(ex) && ex.getPipelineResult().stream().noneMatch(RedisCalls::isNoScript)) {
				replies = ex.getPipelineResult();
			}
			else {
				// Some node lost its script cache: send the whole batch again as EVAL (renewal is
				// idempotent).
				connection.openPipeline();
				try {
					replies = pipelineRenew(connection, groups, true);
				}
				catch (RedisPipelineException again) {
					replies = again.getPipelineResult();
				}
			}
		}
		for (int i = 0; i < groups.size(); i++) {
			// A failed pipeline may not say which slots failed (Lettuce's cluster pipeline does not).
			if (replies.size() == groups.size() && replies.get(i) instanceof List<?> reply) {
				collectRenewed(groups.get(i), reply, renewed);
			}
			else {
				// This slot failed (e.g. TRYAGAIN while it moves to another node): on its own again.
				renewSlot(connection, groups.get(i), renewed);
			}
		}
		return renewed;
	}

	/**
	 * Renews the locks of one slot with one script call; while the slot moves to another node and
	 * its keys are split between the two, Redis refuses a call over several of them
	 * ({@code TRYAGAIN}), so then one call per key, each followed where it is ({@code ASK}).
	 */
	private void renewSlot(RedisConnection connection, List<HeldLock> group, Set<String> renewed) {
		try {
			collectRenewed(group,
					evalSha(connection, RedisScripts.RENEW, ReturnType.MULTI, group.size(), renewArguments(group)),
					renewed);
		}
		catch (RuntimeException ex) {
			if (group.size() == 1 || !hasMessage(ex, "TRYAGAIN")) {
				throw ex;
			}
			for (HeldLock lock : group) {
				List<HeldLock> one = List.of(lock);
				collectRenewed(one, evalSha(connection, RedisScripts.RENEW, ReturnType.MULTI, 1, renewArguments(one)),
						renewed);
			}
		}
	}

	/** Sends the renewals on the connection's open pipeline, closes it and returns the replies. */
	private List<Object> pipelineRenew(RedisConnection connection, List<List<HeldLock>> groups, boolean sendScript) {
		for (List<HeldLock> group : groups) {
			if (sendScript) {
				connection.scriptingCommands()
					.eval(bytes(RedisScripts.RENEW.getScriptAsString()), ReturnType.MULTI, group.size(), renewArguments(group));
			}
			else {
				connection.scriptingCommands()
					.evalSha(RedisScripts.RENEW.getSha1(), ReturnType.MULTI, group.size(), renewArguments(group));
			}
		}
		return connection.closePipeline();
	}

	private byte[][] renewArguments(List<HeldLock> locks) {
		int size = locks.size();
		byte[][] keysAndArgs = new byte[size * 3][];
		for (int i = 0; i < size; i++) {
			HeldLock lock = locks.get(i);
			keysAndArgs[i] = lockKey(lock.key());
			keysAndArgs[size + 2 * i] = ownerBytes(lock.owner());
			keysAndArgs[size + 2 * i + 1] = bytes(Long.toString(ttlMillis(lock.ttl())));
		}
		return keysAndArgs;
	}

	private static void collectRenewed(List<HeldLock> locks, @Nullable List<?> reply, Set<String> renewed) {
		if (reply == null) {
			throw new LockBackendException("Redis renew gave no reply", null);
		}
		for (Object index : reply) {
			renewed.add(locks.get(((Number) index).intValue() - 1).key());
		}
	}

	private static String describe(List<HeldLock> locks) {
		String first = "'" + locks.get(0).key() + "'";
		return (locks.size() == 1) ? "renew of lock " + first
				: "renew of locks " + first + " and " + (locks.size() - 1) + " more";
	}

}
