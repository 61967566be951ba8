package dev.holdfast.faults;

import java.io.PrintWriter;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.Collectors;

import com.zaxxer.hikari.HikariDataSource;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;

/**
 * The yardstick of a fault run: a minimal owner-checked lock client without Holdfast, shaped
 * like Spring Integration's lock registries. One owner id per process; acquire takes a free or
 * expired lock, or renews one this process already owns (so an acquisition whose reply was lost
 * and that landed anyway is simply taken again by the same process); release deletes the lock
 * only for its owner (on PostgreSQL it expires the row, keeping the counter). No renewal, no release notifications: waiters poll every 50 ms. Same
 * loop, timeouts and log lines as {@link FaultClient}: 2 s wait, Redis command timeout 500 ms
 * with a 50 ms reconnect delay, PostgreSQL statements bounded by a 1 s query timeout on the
 * suite's client pool; the fencing token is a counter incremented by each grant.
 * <p>
 * Arguments as {@link FaultClient}'s; {@code backend} is {@code redis} or {@code jdbc}.
 */
public final class MinimalFaultClient {

	// KEYS: lock, counter. ARGV: owner, ttl ms. Returns the token, or 0 when another owner holds it.
	private static final String ACQUIRE = """
			local holder = redis.call('GET', KEYS[1])
			if holder == ARGV[1] then
				redis.call('PEXPIRE', KEYS[1], ARGV[2])
			elseif holder then
				return 0
			else
				redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
			end
			return redis.call('INCR', KEYS[2])
			""";

	private static final String RELEASE = """
			if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
			return 0
			""";

	private static final String TABLE = """
			CREATE TABLE IF NOT EXISTS minimal_locks (lock_key VARCHAR(255) PRIMARY KEY,
			owner VARCHAR(64) NOT NULL, expires_at TIMESTAMPTZ NOT NULL, fence BIGINT NOT NULL)""";

	// Takes the row if free, expired or ours; the token is the row's counter.
	private static final String JDBC_ACQUIRE = """
			INSERT INTO minimal_locks AS l (lock_key, owner, expires_at, fence)
			VALUES (?, ?, now() + ? * interval '1 millisecond', 1)
			ON CONFLICT (lock_key) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at,
			fence = l.fence + 1 WHERE l.expires_at < now() OR l.owner = EXCLUDED.owner
			RETURNING fence""";

	// Expires the row in place, keeping its counter: a deleted row would restart the tokens at 1.
	private static final String JDBC_RELEASE = "UPDATE minimal_locks SET owner = '', expires_at = now() "
			+ "WHERE lock_key = ? AND owner = ?";

	private static final long WAIT_NANOS = Duration.ofSeconds(2).toNanos();

	private MinimalFaultClient() {
	}

	/** One lock backend as the loop sees it: a token or 0 for held; exceptions for failures. */
	private interface Locks extends AutoCloseable {

		long tryAcquire(String key, String owner, long ttlMs) throws Exception;

		void release(String key, String owner) throws Exception;

	}

	public static void main(String[] args) throws Exception {
		Map<String, String> arguments = Arrays.stream(args)
			.map((argument) -> argument.split("=", 2))
			.collect(Collectors.toMap((pair) -> pair[0], (pair) -> pair[1]));
		String backend = arguments.get("backend");
		String node = arguments.get("nodes").split(",")[0];
		long ttlMs = Long.parseLong(arguments.get("ttlMs"));
		long workMs = Long.parseLong(arguments.get("workMs"));
		long deadline = System.nanoTime() + Duration.ofMillis(Long.parseLong(arguments.get("durationMs"))).toNanos();
		String lock = arguments.get("lock");
		Path stopFile = Path.of(arguments.get("stopFile"));
		String owner = UUID.randomUUID().toString();
		try (PrintWriter log = new PrintWriter(Files.newBufferedWriter(Path.of(arguments.get("log")),
				StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND));
				SharedResource resource = SharedResource.connect(arguments.get("resource"));
				Locks locks = backend.equals("jdbc") ? jdbc(node) : redis(node)) {
			FaultClient.Events events = new FaultClient.Events(log, ProcessHandle.current().pid());
			events.log("START minimal-" + backend);
			while (System.nanoTime() < deadline && !Files.exists(stopFile)) {
				runOnce(locks, lock, owner, ttlMs, resource, workMs, events);
				Thread.sleep(ThreadLocalRandom.current().nextLong(1, 10));
			}
			events.log("STOP");
		}
		System.exit(0);
	}

	private static void runOnce(Locks locks, String lock, String owner, long ttlMs, SharedResource resource,
			long workMs, FaultClient.Events events) throws InterruptedException {
		long token;
		long waitUntil = System.nanoTime() + WAIT_NANOS;
		try {
			while ((token = locks.tryAcquire(lock, owner, ttlMs)) == 0) {
				if (System.nanoTime() - waitUntil > 0) {
					events.log("TIMEOUT");
					return;
				}
				Thread.sleep(50);
			}
		}
		catch (InterruptedException ex) {
			throw ex;
		}
		catch (Exception ex) {
			events.log("ERR " + describe(ex));
			Thread.sleep(50);
			return;
		}
		events.log("ACQ " + token);
		try {
			Resource.Read plain = resource.read(Resource.PLAIN, token, false);
			Resource.Read fenced = resource.read(Resource.FENCED, token, true);
			Thread.sleep(workMs);
			String plainResult = resource.write(Resource.PLAIN, token, plain.value() + 1, false);
			events.log("WR plain " + token + " " + (plain.value() + 1) + " " + plainResult);
			if (fenced.accepted()) {
				String fencedResult = resource.write(Resource.FENCED, token, fenced.value() + 1, true);
				events.log("WR fenced " + token + " " + (fenced.value() + 1) + " " + fencedResult);
			}
			else {
				events.log("WR fenced " + token + " - rejected");
			}
			events.log("REL " + token + " valid");
		}
		catch (RuntimeException ex) {
			events.log("ERR " + describe(ex));
		}
		try {
			locks.release(lock, owner);
		}
		catch (Exception ex) {
			// The lock expires by itself.
		}
	}

	private static Locks redis(String uri) {
		ClientResources resources = ClientResources.builder()
			.reconnectDelay(Delay.constant(Duration.ofMillis(50)))
			.build();
		URI parsed = URI.create(uri);
		RedisURI redisUri = RedisURI.Builder.redis(parsed.getHost(), parsed.getPort())
			.withTimeout(Duration.ofMillis(500))
			.build();
		RedisClient client = RedisClient.create(resources, redisUri);
		client.setOptions(ClientOptions.builder().autoReconnect(true).build());
		StatefulRedisConnection<String, String> connection = client.connect();
		RedisCommands<String, String> commands = connection.sync();
		return new Locks() {

			@Override
			public long tryAcquire(String key, String owner, long ttlMs) {
				Long token = commands.eval(ACQUIRE, ScriptOutputType.INTEGER,
						new String[] { "{" + key + "}", "{" + key + "}:fence" }, owner, Long.toString(ttlMs));
				return token;
			}

			@Override
			public void release(String key, String owner) {
				commands.eval(RELEASE, ScriptOutputType.INTEGER, new String[] { "{" + key + "}" }, owner);
			}

			@Override
			public void close() {
				connection.close();
				client.shutdown();
				resources.shutdown();
			}

		};
	}

	private static Locks jdbc(String jdbcUrl) throws SQLException {
		HikariDataSource pool = PostgresNode.clientPool(jdbcUrl, "minimal-locks", 4);
		try (Connection connection = pool.getConnection(); Statement statement = connection.createStatement()) {
			statement.execute(TABLE);
		}
		return new Locks() {

			@Override
			public long tryAcquire(String key, String owner, long ttlMs) throws SQLException {
				try (Connection connection = pool.getConnection();
						PreparedStatement statement = connection.prepareStatement(JDBC_ACQUIRE)) {
					statement.setQueryTimeout(1);
					statement.setString(1, key);
					statement.setString(2, owner);
					statement.setLong(3, ttlMs);
					try (ResultSet result = statement.executeQuery()) {
						return result.next() ? result.getLong(1) : 0;
					}
				}
			}

			@Override
			public void release(String key, String owner) throws SQLException {
				try (Connection connection = pool.getConnection();
						PreparedStatement statement = connection.prepareStatement(JDBC_RELEASE)) {
					statement.setQueryTimeout(1);
					statement.setString(1, key);
					statement.setString(2, owner);
					statement.executeUpdate();
				}
			}

			@Override
			public void close() {
				pool.close();
			}

		};
	}

	private static String describe(Throwable ex) {
		return (ex.getClass().getSimpleName() + ": " + ex.getMessage()).replaceAll("\\s+", " ");
	}

}
