package dev.holdfast.bench;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.jdbctemplate.JdbcTemplateLockProvider;
import org.redisson.Redisson;
import org.redisson.RedissonRedLock;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;
import org.springframework.integration.jdbc.lock.JdbcLockRegistry;
import org.springframework.integration.redis.util.RedisLockRegistry;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;

/**
 * Builds every contender the same way an application would, from the servers that
 * {@link Main} started (passed to forked JVMs as system properties).
 */
public final class Clients {

	/** Lease time every contender uses where it takes one. */
	static final Duration LEASE = Duration.ofSeconds(30);

	private static final String COMPARE_AND_DELETE = "if redis.call('get', KEYS[1]) == ARGV[1] then "
			+ "return redis.call('del', KEYS[1]) else return 0 end";

	private Clients() {
	}

	/** Creates contender {@code id}, such as {@code redis-floor} or {@code jdbc-holdfast}. */
	public static LockClient create(String id) throws Exception {
		return switch (id) {
			case "redis-floor" -> lettuceFloor(redisPort());
			case "redis-holdfast" -> HoldfastClients.redisTemplate(connectionFactory(redisPort()));
			case "redis-holdfast-sync-release" -> HoldfastClients.redisTemplateSyncRelease(connectionFactory(redisPort()));
			case "redis-holdfast-annotation" -> HoldfastClients.redisAnnotation(connectionFactory(redisPort()));
			case "redis-redisson" -> redisson(redissonClient(redisPort()));
			case "redis-shedlock" -> shedLock(shedLockRedis(connectionFactory(redisPort())));
			case "redis-spring-integration" -> redisLockRegistry(connectionFactory(redisPort()));
			case "jdbc-floor" -> jdbcFloor(dataSource());
			case "jdbc-holdfast" -> HoldfastJdbcClients.create(dataSource());
			case "jdbc-shedlock" -> shedLockJdbc(dataSource());
			case "jdbc-spring-integration" -> jdbcLockRegistry(dataSource());
			case "redlock-floor" -> RedlockFloorClients.create(redlockPorts());
			case "redlock-holdfast" -> HoldfastRedlockClients.create(redlockPorts());
			case "redlock-redisson" -> redissonRedLock(redlockClients());
			case "redis-floor-2keys", "redis-floor-2keys-1rt", "redis-holdfast-2keys-serial", "redis-holdfast-2keys",
					"redis-holdfast-permit", "jdbc-floor-2keys", "jdbc-floor-2keys-1rt", "jdbc-holdfast-2keys-serial",
					"jdbc-holdfast-2keys", "jdbc-holdfast-permit" ->
				SeveralKeysClients.create(id);
			case "redis-holdfast-write", "redis-holdfast-read", "redis-holdfast-write-shared",
					"redis-holdfast-read-shared", "redis-holdfast-write-shared-work", "redis-holdfast-read-shared-work",
					"jdbc-holdfast-write", "jdbc-holdfast-read", "jdbc-holdfast-write-shared", "jdbc-holdfast-read-shared",
					"jdbc-holdfast-write-shared-work", "jdbc-holdfast-read-shared-work" ->
				ReadWriteClients.create(id);
			case "zookeeper-floor", "zookeeper-holdfast", "zookeeper-curator", "zookeeper-shedlock" ->
				ZooKeeperClients.create(id);
			default -> throw new IllegalArgumentException("Unknown contender " + id);
		};
	}

	static int redisPort() {
		return Integer.getInteger("bench.redis.port", 6379);
	}

	static List<Integer> redlockPorts() {
		List<Integer> ports = new ArrayList<>();
		for (String port : System.getProperty("bench.redlock.ports", "").split(",")) {
			if (!port.isBlank()) {
				ports.add(Integer.parseInt(port.trim()));
			}
		}
		if (ports.isEmpty()) {
			throw new IllegalStateException("bench.redlock.ports is not set");
		}
		return ports;
	}

	/** A unique owner token, cheap enough not to dominate a benchmark. */
	static String owner() {
		return OWNER_PREFIX + OWNERS.incrementAndGet();
	}

	private static final String OWNER_PREFIX = Long.toHexString(ThreadLocalRandom.current().nextLong()) + ":";

	private static final AtomicLong OWNERS = new AtomicLong();

	// ---- Redis ----------------------------------------------------------------------------

	/** The floor: Lettuce sync {@code SET key owner NX PX}, then a compare-and-delete {@code EVALSHA}. */
	static LockClient lettuceFloor(int port) {
		RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", port));
		StatefulRedisConnection<String, String> connection = client.connect();
		RedisCommands<String, String> redis = connection.sync();
		String sha = redis.scriptLoad(COMPARE_AND_DELETE);
		SetArgs args = SetArgs.Builder.nx().px(LEASE.toMillis());
		return new LockClient() {

			@Override
			public void lockUnlock(String key) {
				String owner = owner();
				if (redis.set(key, owner, args) == null) {
					throw new IllegalStateException("floor did not acquire " + key);
				}
				redis.evalsha(sha, ScriptOutputType.INTEGER, new String[] { key }, owner);
			}

			@Override
			public Held lock(String key) {
				String owner = owner();
				// The floor of waiting: retry at once, as often as the round trip allows.
				while (redis.set(key, owner, args) == null) {
					Thread.onSpinWait();
				}
				return () -> redis.evalsha(sha, ScriptOutputType.INTEGER, new String[] { key }, owner);
			}

			@Override
			public Held tryLock(String key) {
				String owner = owner();
				if (redis.set(key, owner, args) == null) {
					return null;
				}
				return () -> redis.evalsha(sha, ScriptOutputType.INTEGER, new String[] { key }, owner);
			}

			@Override
			public void close() {
				connection.close();
				client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
			}

		};
	}

	static LettuceConnectionFactory connectionFactory(int port) {
		LettuceConnectionFactory factory = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", port));
		factory.afterPropertiesSet();
		factory.start();
		return factory;
	}

	static RedissonClient redissonClient(int port) {
		Config config = new Config();
		config.useSingleServer().setAddress("redis://127.0.0.1:" + port);
		return Redisson.create(config);
	}

	/** Redisson {@code RLock}: {@code tryLock()} with its watchdog renewal, as most users call it. */
	static LockClient redisson(RedissonClient redisson) {
		return new LockClient() {

			@Override
			public void lockUnlock(String key) {
				RLock lock = redisson.getLock(key);
				if (!lock.tryLock()) {
					throw new IllegalStateException("redisson did not acquire " + key);
				}
				lock.unlock();
			}

			@Override
			public Held lock(String key) {
				RLock lock = redisson.getLock(key);
				lock.lock();
				return lock::unlock;
			}

			@Override
			public Held tryLock(String key) {
				RLock lock = redisson.getLock(key);
				return lock.tryLock() ? lock::unlock : null;
			}

			@Override
			public void close() {
				redisson.shutdown();
			}

		};
	}

	static LockProvider shedLockRedis(LettuceConnectionFactory factory) {
		return new net.javacrumbs.shedlock.provider.redis.spring.RedisLockProvider(factory, "bench");
	}

	/** ShedLock: {@code lock(configuration)} and {@code unlock()}; it has no waiting and no renewal. */
	static LockClient shedLock(LockProvider provider) {
		return new LockClient() {

			@Override
			public void lockUnlock(String key) throws Exception {
				Held held = tryLock(key);
				if (held == null) {
					throw new IllegalStateException("shedlock did not acquire " + key);
				}
				held.release();
			}

			@Override
			public Held tryLock(String key) {
				Optional<SimpleLock> lock = provider.lock(new LockConfiguration(Instant.now(), key, LEASE, Duration.ZERO));
				return lock.<Held>map((held) -> held::unlock).orElse(null);
			}

		};
	}

	/** Spring Integration {@code RedisLockRegistry} with its defaults. */
	static LockClient redisLockRegistry(LettuceConnectionFactory factory) {
		RedisLockRegistry registry = new RedisLockRegistry(factory, "bench-si", LEASE.toMillis());
		return lockRegistry(registry::obtain, "spring-integration redis", () -> {
			registry.destroy();
			factory.destroy();
		});
	}

	interface Obtain {

		Lock obtain(Object key);

	}

	private static LockClient lockRegistry(Obtain registry, String name, AutoCloseable onClose) {
		return new LockClient() {

			@Override
			public void lockUnlock(String key) throws InterruptedException {
				Lock lock = registry.obtain(key);
				// The key is free; a bounded wait (not tryLock()) so that a round trip slowed down
				// by a loaded machine is not taken for a held lock.
				if (!lock.tryLock(5, TimeUnit.SECONDS)) {
					throw new IllegalStateException(name + " did not acquire " + key);
				}
				lock.unlock();
			}

			@Override
			public Held lock(String key) throws InterruptedException {
				Lock lock = registry.obtain(key);
				while (!lock.tryLock(1, TimeUnit.MINUTES)) {
					// keep waiting
				}
				return lock::unlock;
			}

			@Override
			public Held tryLock(String key) {
				Lock lock = registry.obtain(key);
				return lock.tryLock() ? lock::unlock : null;
			}

			@Override
			public void close() throws Exception {
				onClose.close();
			}

		};
	}

	// ---- Redlock --------------------------------------------------------------------------

	static List<RedissonClient> redlockClients() {
		List<RedissonClient> clients = new ArrayList<>();
		for (int port : redlockPorts()) {
			clients.add(redissonClient(port));
		}
		return clients;
	}

	/** Redisson's {@code RedissonRedLock} (deprecated by Redisson, still the peer for Redlock). */
	@SuppressWarnings("deprecation")
	static LockClient redissonRedLock(List<RedissonClient> clients) {
		return new LockClient() {

			@Override
			public void lockUnlock(String key) throws InterruptedException {
				RLock[] locks = new RLock[clients.size()];
				for (int i = 0; i < locks.length; i++) {
					locks[i] = clients.get(i).getLock(key);
				}
				RedissonRedLock redLock = new RedissonRedLock(locks);
				if (!redLock.tryLock()) {
					throw new IllegalStateException("RedissonRedLock did not acquire " + key);
				}
				redLock.unlock();
			}

			@Override
			public void close() {
				clients.forEach(RedissonClient::shutdown);
			}

		};
	}

	// ---- JDBC -----------------------------------------------------------------------------

	static HikariDataSource dataSource() {
		HikariConfig config = new HikariConfig();
		config.setJdbcUrl(System.getProperty("bench.jdbc.url", "jdbc:postgresql://127.0.0.1:5432/test"));
		config.setUsername(System.getProperty("bench.jdbc.user", "postgres"));
		String password = System.getProperty("bench.jdbc.password", "");
		if (!password.isEmpty()) {
			config.setPassword(password);
		}
		config.setMaximumPoolSize(12);
		config.setMinimumIdle(12);
		config.setPoolName("bench");
		return new HikariDataSource(config);
	}

	/**
	 * The floor: one autocommit statement to acquire (an upsert that takes the row only if absent
	 * or expired, on the database clock) and one owner-checked {@code DELETE} to release.
	 */
	static LockClient jdbcFloor(HikariDataSource dataSource) {
		String acquire = floorUpsert(1);
		String release = "DELETE FROM bench_floor_lock WHERE lock_key = ? AND owner_token = ?";
		return new LockClient() {

			@Override
			public void lockUnlock(String key) throws Exception {
				String owner = owner();
				if (!tryAcquire(key, owner)) {
					throw new IllegalStateException("jdbc floor did not acquire " + key);
				}
				release(key, owner);
			}

			@Override
			public Held lock(String key) throws Exception {
				String owner = owner();
				while (!tryAcquire(key, owner)) {
					Thread.onSpinWait();
				}
				return () -> release(key, owner);
			}

			@Override
			public Held tryLock(String key) throws Exception {
				String owner = owner();
				return tryAcquire(key, owner) ? () -> release(key, owner) : null;
			}

			private boolean tryAcquire(String key, String owner) throws Exception {
				return update(dataSource, acquire, key, owner) == 1;
			}

			private void release(String key, String owner) throws Exception {
				update(dataSource, release, key, owner);
			}

			@Override
			public void close() {
				dataSource.close();
			}

		};
	}

	/**
	 * The floor's upsert of {@code rows} rows (parameters: key and owner of each), each taken only if
	 * absent or expired, on the database clock.
	 */
	static String floorUpsert(int rows) {
		String row = "(?, ?, now() + interval '30 seconds')";
		return "INSERT INTO bench_floor_lock (lock_key, owner_token, expires_at) VALUES "
				+ String.join(", ", Collections.nCopies(rows, row))
				+ " ON CONFLICT (lock_key) DO UPDATE SET owner_token = excluded.owner_token, expires_at = excluded.expires_at "
				+ "WHERE bench_floor_lock.expires_at < now()";
	}

	/** One autocommit statement on a pooled connection, its parameters strings; the rows it changed. */
	static int update(HikariDataSource dataSource, String sql, String... parameters) throws Exception {
		try (var connection = dataSource.getConnection(); var ps = connection.prepareStatement(sql)) {
			for (int i = 0; i < parameters.length; i++) {
				ps.setString(i + 1, parameters[i]);
			}
			return ps.executeUpdate();
		}
	}

	static LockClient shedLockJdbc(HikariDataSource dataSource) {
		JdbcTemplateLockProvider provider = new JdbcTemplateLockProvider(JdbcTemplateLockProvider.Configuration.builder()
			.withJdbcTemplate(new org.springframework.jdbc.core.JdbcTemplate(dataSource))
			.usingDbTime()
			.build());
		LockClient client = shedLock(provider);
		return new LockClient() {

			@Override
			public void lockUnlock(String key) throws Exception {
				client.lockUnlock(key);
			}

			@Override
			public Held tryLock(String key) throws Exception {
				return client.tryLock(key);
			}

			@Override
			public void close() {
				dataSource.close();
			}

		};
	}

	/** Spring Integration {@code JdbcLockRegistry} on a {@code DefaultLockRepository}, defaults. */
	static LockClient jdbcLockRegistry(HikariDataSource dataSource) {
		DefaultLockRepository repository = new DefaultLockRepository(dataSource);
		repository.setTransactionManager(new DataSourceTransactionManager(dataSource));
		repository.afterPropertiesSet();
		repository.afterSingletonsInstantiated();
		repository.start();
		JdbcLockRegistry registry = new JdbcLockRegistry(repository);
		return lockRegistry(registry::obtain, "spring-integration jdbc", () -> {
			repository.close();
			dataSource.close();
		});
	}

}
