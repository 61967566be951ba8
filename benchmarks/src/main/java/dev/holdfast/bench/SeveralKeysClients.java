package dev.holdfast.bench;

import java.time.Duration;
import java.util.List;

import com.zaxxer.hikari.HikariDataSource;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;

import dev.holdfast.core.DefaultLockTemplate;

/**
 * The contenders of issue 31's measurements ({@code -Dbench.only=multi}): two keys in one call
 * against two single-key locks and against the floor of the same work, and a permit of a free
 * semaphore against a single lock. Every operation locks the thread's key {@code k} as two keys
 * {@code k:a} and {@code k:b} (Holdfast: name {@code k}, keys {@code "a"} and {@code "b"}), or as
 * a semaphore of {@value #PERMITS} permits (name {@code k}).
 */
final class SeveralKeysClients {

	/** The permits of the semaphore the permit contenders take from. */
	static final int PERMITS = 3;

	static final List<String> KEYS = List.of("a", "b");

	/** Per backend: single-key floor and Holdfast first, then the two-key and permit contenders. */
	static final List<String> CONTENDERS = List.of("redis-floor", "redis-floor-2keys", "redis-floor-2keys-1rt",
			"redis-holdfast", "redis-holdfast-2keys-serial", "redis-holdfast-2keys", "redis-holdfast-permit",
			"jdbc-floor", "jdbc-floor-2keys", "jdbc-floor-2keys-1rt", "jdbc-holdfast", "jdbc-holdfast-2keys-serial",
			"jdbc-holdfast-2keys", "jdbc-holdfast-permit");

	private static final String TAKE_TWO = "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then "
			+ "if redis.call('set', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end "
			+ "redis.call('del', KEYS[1]) end return 0";

	private static final String RELEASE_TWO = "local n = 0 for i = 1, 2 do "
			+ "if redis.call('get', KEYS[i]) == ARGV[1] then n = n + redis.call('del', KEYS[i]) end end return n";

	private SeveralKeysClients() {
	}

	/** Contender {@code id} of {@link #CONTENDERS} that {@link Clients} does not build itself. */
	static LockClient create(String id) throws Exception {
		return switch (id) {
			case "redis-floor-2keys" -> oneAfterTheOther(Clients.lettuceFloor(Clients.redisPort()));
			case "redis-floor-2keys-1rt" -> redisOneRoundTrip(Clients.redisPort());
			case "redis-holdfast-2keys-serial", "redis-holdfast-2keys", "redis-holdfast-permit" ->
				holdfast(id, HoldfastClients.redisBackendTemplate(Clients.connectionFactory(Clients.redisPort())));
			case "jdbc-floor-2keys" -> oneAfterTheOther(Clients.jdbcFloor(Clients.dataSource()));
			case "jdbc-floor-2keys-1rt" -> jdbcOneStatement(Clients.dataSource());
			case "jdbc-holdfast-2keys-serial", "jdbc-holdfast-2keys", "jdbc-holdfast-permit" ->
				holdfast(id, HoldfastJdbcClients.template(Clients.dataSource()));
			default -> throw new IllegalArgumentException("Unknown contender " + id);
		};
	}

	/**
	 * The floor of two keys with the single-key floor's commands: take {@code k:a}, take
	 * {@code k:b}, release {@code k:b}, release {@code k:a}; four round trips.
	 */
	static LockClient oneAfterTheOther(LockClient floor) {
		return new LockClient() {

			@Override
			public void lockUnlock(String key) throws Exception {
				LockClient.Held a = taken(floor.tryLock(key + ":a"), key + ":a");
				LockClient.Held b = taken(floor.tryLock(key + ":b"), key + ":b");
				b.release();
				a.release();
			}

			@Override
			public void close() throws Exception {
				floor.close();
			}

		};
	}

	/** The floor of two keys in one round trip each way: one script takes both keys (or none), one releases both. */
	static LockClient redisOneRoundTrip(int port) {
		RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", port));
		StatefulRedisConnection<String, String> connection = client.connect();
		RedisCommands<String, String> redis = connection.sync();
		String take = redis.scriptLoad(TAKE_TWO);
		String release = redis.scriptLoad(RELEASE_TWO);
		String lease = Long.toString(Clients.LEASE.toMillis());
		return new LockClient() {

			@Override
			public void lockUnlock(String key) {
				String owner = Clients.owner();
				String[] keys = { key + ":a", key + ":b" };
				Long got = redis.evalsha(take, ScriptOutputType.INTEGER, keys, owner, lease);
				if (got == null || got != 1) {
					throw new IllegalStateException("floor did not acquire " + key + ":a and :b");
				}
				redis.evalsha(release, ScriptOutputType.INTEGER, keys, owner);
			}

			@Override
			public void close() {
				connection.close();
				client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
			}

		};
	}

	/**
	 * The floor of two keys in one statement each way: one upsert of both rows (each taken only if
	 * absent or expired), one owner-checked {@code DELETE} of both.
	 */
	static LockClient jdbcOneStatement(HikariDataSource dataSource) {
		String acquire = Clients.floorUpsert(2);
		String release = "DELETE FROM bench_floor_lock WHERE lock_key IN (?, ?) AND owner_token = ?";
		return new LockClient() {

			@Override
			public void lockUnlock(String key) throws Exception {
				String owner = Clients.owner();
				int taken = Clients.update(dataSource, acquire, key + ":a", owner, key + ":b", owner);
				Clients.update(dataSource, release, key + ":a", key + ":b", owner);
				if (taken != 2) {
					throw new IllegalStateException("jdbc floor took " + taken + " of " + key + ":a and :b");
				}
			}

			@Override
			public void close() {
				dataSource.close();
			}

		};
	}

	/**
	 * Holdfast through {@code LockTemplate}, 30 s lease, renewal on, one attempt: {@code -2keys} is
	 * {@code executeLockedAll(k, [a, b])}; {@code -2keys-serial} is {@code executeLocked(k, a)}
	 * with {@code executeLocked(k, b)} inside, as a caller nests two locks; {@code -permit} is
	 * {@code executeWithPermit(k, null, 3)}.
	 */
	static LockClient holdfast(String id, HoldfastClients.Closing closing) {
		DefaultLockTemplate template = closing.template();
		String kind = id.substring(id.indexOf("-holdfast") + "-holdfast".length());
		return new LockClient() {

			@Override
			public void lockUnlock(String key) {
				switch (kind) {
					case "-2keys" -> template.executeLockedAll(key, KEYS, HoldfastClients.ONE_ATTEMPT, () -> null);
					case "-2keys-serial" -> template.executeLocked(key, "a", HoldfastClients.ONE_ATTEMPT,
							() -> template.executeLocked(key, "b", HoldfastClients.ONE_ATTEMPT, () -> null));
					case "-permit" -> template.executeWithPermit(key, null, PERMITS, HoldfastClients.ONE_ATTEMPT,
							() -> null);
					default -> throw new IllegalArgumentException("Unknown contender " + id);
				}
			}

			@Override
			public void close() throws Exception {
				template.close();
				closing.onClose().close();
			}

		};
	}

	private static LockClient.Held taken(LockClient.Held held, String key) {
		if (held == null) {
			throw new IllegalStateException("floor did not acquire " + key);
		}
		return held;
	}

}
