package dev.holdfast.redis;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;

import org.jspecify.annotations.Nullable;

import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisClusterNode;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.Cursor;
import org.springframework.data.redis.core.ScanOptions;
import org.springframework.data.redis.core.script.RedisScript;

import dev.holdfast.spi.ClusterLocks.BackendLock;
import dev.holdfast.spi.ClusterLocks.Listing;
import dev.holdfast.spi.InstanceNames;

import static dev.holdfast.redis.RedisCalls.bytes;
import static dev.holdfast.redis.RedisCalls.evalSha;
import static dev.holdfast.redis.RedisCalls.failure;
import static dev.holdfast.redis.RedisCalls.fenceKey;
import static dev.holdfast.redis.RedisCalls.lockKey;
import static dev.holdfast.redis.RedisCalls.readersKey;

/**
 * The locks of every instance, for operators (see {@link RedisLockBackend#listLocks}): {@code SCAN}
 * of the lock keys under the prefix ({@code {<prefix>*}}, on Redis Cluster on every master),
 * then one script call per lock found; and the forced release, one script call.
 */
final class RedisClusterLocks {

	/** Keys a {@code SCAN} call looks at. */
	private static final int SCAN_COUNT = 1000;

	/** How long a listing may scan before it stops, incomplete. */
	private static final long SCAN_BUDGET_NANOS = 2_000_000_000L;

	/**
	 * A lock's value, remaining time and fencing counter; nothing for a free or reserved lock. A
	 * read-held lock's value is '~readers' and its live reader entries counted (RWL-27).
	 */
	private static final RedisScript<List<?>> INSPECT = RedisScript.of("""
			local holder = redis.call('GET', KEYS[1])
			if not holder or string.sub(holder, 1, 1) == '*' then return {} end
			local fence = redis.call('GET', KEYS[2]) or '0'
			if holder == '~readers' then
				local time = redis.call('TIME')
				local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
				local live = redis.call('ZCOUNT', KEYS[3], string.format('(%d', now), '+inf')
				holder = '~readers:' .. live
			end
			return {holder, redis.call('PTTL', KEYS[1]), fence}
			""");

	/**
	 * Deletes a held lock whoever holds it (when ARGV[1] is a token: only if the fencing counter,
	 * the holder's token, is that one); the counter stays, so the next holder's token is larger.
	 * A read-held lock's reader entries go with it: the group ends (RWL-27).
	 */
	private static final RedisScript<Long> FORCE_RELEASE = RedisScript.of("""
			local holder = redis.call('GET', KEYS[1])
			if not holder or string.sub(holder, 1, 1) == '*' then return 0 end
			if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end
			redis.call('DEL', KEYS[1], KEYS[3])
			return 1
			""", Long.class);

	private final RedisConnectionFactory connectionFactory;

	RedisClusterLocks(RedisConnectionFactory connectionFactory) {
		this.connectionFactory = connectionFactory;
	}

	Listing listLocks(String prefix, int max) {
		ScanOptions options = ScanOptions.scanOptions().match("{" + globEscaped(prefix) + "*}").count(SCAN_COUNT).build();
		long deadline = System.nanoTime() + SCAN_BUDGET_NANOS;
		TreeSet<String> keys = new TreeSet<>();
		boolean complete = true;
		try (RedisConnection connection = this.connectionFactory.getConnection()) {
			List<Cursor<byte[]>> scans = new ArrayList<>();
			if (connection instanceof RedisClusterConnection cluster) {
				for (RedisClusterNode node : cluster.clusterGetNodes()) {
					if (node.isMaster()) {
						scans.add(cluster.scan(node, options));
					}
				}
			}
			else {
				scans.add(connection.keyCommands().scan(options));
			}
			for (Cursor<byte[]> scan : scans) {
				try (scan) {
					while (complete && scan.hasNext()) {
						String tagged = new String(scan.next(), StandardCharsets.UTF_8);
						keys.add(tagged.substring(1, tagged.length() - 1));
						complete = keys.size() <= max && System.nanoTime() - deadline < 0;
					}
				}
			}
			List<BackendLock> locks = new ArrayList<>();
			for (String key : keys.stream().limit(max).toList()) {
				BackendLock lock = inspect(connection, key);
				if (lock != null) {
					locks.add(lock);
				}
			}
			return new Listing(locks, complete);
		}
		catch (RuntimeException ex) {
			throw failure("listing of the locks under '" + prefix + "'", ex);
		}
	}

	/** The holder of one key: one script call, no {@code SCAN}. */
	@Nullable BackendLock lock(String key) {
		try (RedisConnection connection = this.connectionFactory.getConnection()) {
			return inspect(connection, key);
		}
		catch (RuntimeException ex) {
			throw failure("read", key, ex);
		}
	}

	boolean forceRelease(String key, @Nullable Long fencingToken) {
		try (RedisConnection connection = this.connectionFactory.getConnection()) {
			Long released = evalSha(connection, FORCE_RELEASE, ReturnType.INTEGER,
					new byte[][] { lockKey(key), fenceKey(key), readersKey(key) },
					new byte[][] { bytes((fencingToken != null) ? Long.toString(fencingToken) : "") });
			return released != null && released == 1;
		}
		catch (RuntimeException ex) {
			throw failure("forced release", key, ex);
		}
	}

	private static @Nullable BackendLock inspect(RedisConnection connection, String key) {
		List<?> answer = evalSha(connection, INSPECT, ReturnType.MULTI,
				new byte[][] { lockKey(key), fenceKey(key), readersKey(key) }, new byte[0][]);
		if (answer == null || answer.size() != 3) {
			return null;
		}
		String owner = new String((byte[]) answer.get(0), StandardCharsets.UTF_8);
		long remaining = ((Number) answer.get(1)).longValue();
		long token = Long.parseLong(new String((byte[]) answer.get(2), StandardCharsets.US_ASCII));
		// A read-held lock is shown as held by its readers: "<n> readers" (their instances are not told).
		String instance = owner.startsWith("~readers:") ? InstanceNames.readers(Long.parseLong(owner.substring(9)))
				: InstanceNames.of(owner);
		return new BackendLock(key, instance, token, (remaining >= 0) ? remaining : -1);
	}

	/** {@code prefix} with the characters that {@code SCAN MATCH} reads as a pattern escaped. */
	static String globEscaped(String prefix) {
		StringBuilder escaped = new StringBuilder(prefix.length() + 4);
		for (int i = 0; i < prefix.length(); i++) {
			char c = prefix.charAt(i);
			if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') {
				escaped.append('\\');
			}
			escaped.append(c);
		}
		return escaped.toString();
	}

}
