package dev.holdfast.bench;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.zaxxer.hikari.HikariDataSource;
import io.lettuce.core.RedisClient;
import io.lettuce.core.api.StatefulRedisConnection;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.Leadership;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.jdbc.JdbcLockBackend;
import dev.holdfast.leader.DefaultLeaderElections;
import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.server.RedisServer;

/**
 * What leader election costs while nothing happens (issue 30): 3 instances × 10 groups, each
 * instance with its own client and engine as separate processes would have, defaults as the
 * auto-configuration sets them (lease 30 s, poll interval 500 ms). Per backend, two windows of
 * {@code bench.idle.seconds} (30) each: the instances connected with no group joined (the
 * baseline: the engines' and the server's own background work), then every group joined and led
 * (all 10 leaders granted before the window starts). Reported per window: the backend's commands
 * per second (Redis: {@code INFO commandstats} calls, without this probe's {@code INFO}; PostgreSQL:
 * transactions committed or rolled back, from {@code pg_stat_database}), the server's CPU
 * ({@code /proc}, as {@link ServerCpu} reads it) and this JVM's CPU (the 3 instances' clients and
 * engines), per second of the window.
 * <pre class="code">
 * java -cp benchmarks/target/benchmarks.jar dev.holdfast.bench.IdleLeadershipCost
 * </pre>
 * {@code -Dbench.idle.only=redis} or {@code =postgres} runs one backend.
 */
public final class IdleLeadershipCost {

	private static final int INSTANCES = 3;

	private static final int GROUPS = 10;

	private static final Duration LEASE = Duration.ofSeconds(30);

	private static final Pattern CALLS = Pattern.compile("cmdstat_([^:]+):calls=(\\d+)");

	private IdleLeadershipCost() {
	}

	public static void main(String[] args) throws Exception {
		long seconds = Long.getLong("bench.idle.seconds", 30);
		String only = System.getProperty("bench.idle.only", "");
		if (only.isEmpty() || only.equals("redis")) {
			redis(seconds);
		}
		if (only.isEmpty() || only.equals("postgres")) {
			postgres(seconds);
		}
		System.exit(0);
	}

	private static void redis(long seconds) throws Exception {
		try (RedisServer server = RedisServer.start()) {
			System.setProperty("bench.cpu.redis", Long.toString(server.pid()));
			RedisClient probeClient = RedisClient.create("redis://127.0.0.1:" + server.port());
			try (StatefulRedisConnection<String, String> probe = probeClient.connect()) {
				List<LettuceConnectionFactory> factories = new ArrayList<>();
				List<LockBackend> backends = new ArrayList<>();
				for (int i = 0; i < INSTANCES; i++) {
					LettuceConnectionFactory factory = Clients.connectionFactory(server.port());
					factories.add(factory);
					backends.add(RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL));
				}
				Supplier<Map<String, Long>> commands = () -> redisCalls(probe.sync().info("commandstats"));
				measure("Redis " + server.uri(), "redis", backends, commands, seconds);
				backends.forEach(IdleLeadershipCost::closeQuietly);
				factories.forEach(LettuceConnectionFactory::destroy);
			}
			finally {
				probeClient.shutdown();
			}
		}
	}

	private static void postgres(long seconds) throws Exception {
		try (Postgres postgres = Postgres.start(System.getProperty("bench.jdbc.mode", "embedded"))) {
			postgres.createTables();
			System.setProperty("bench.cpu.pg", Long.toString(postgres.postmasterPid()));
			List<HikariDataSource> pools = new ArrayList<>();
			List<LockBackend> backends = new ArrayList<>();
			for (int i = 0; i < INSTANCES; i++) {
				HikariDataSource pool = new HikariDataSource();
				pool.setJdbcUrl(postgres.url);
				pool.setUsername(postgres.user);
				pool.setMaximumPoolSize(4);
				pools.add(pool);
				JdbcLockBackend backend = new JdbcLockBackend(pool);
				backend.setFairHandoff(true);
				backend.setReleaseEvents(true);
				backends.add(backend);
			}
			try (Connection probe = DriverManager.getConnection(postgres.url, postgres.user, "")) {
				Supplier<Map<String, Long>> commands = () -> postgresTransactions(probe);
				measure(postgres.description(), "jdbc", backends, commands, seconds);
			}
			backends.forEach(IdleLeadershipCost::closeQuietly);
			pools.forEach(HikariDataSource::close);
		}
	}

	private static void measure(String server, String cpuKey, List<LockBackend> backends,
			Supplier<Map<String, Long>> commands, long seconds) throws Exception {
		List<DefaultLockTemplate> templates = new ArrayList<>();
		List<DefaultLeaderElections> elections = new ArrayList<>();
		for (LockBackend backend : backends) {
			DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults());
			templates.add(template);
			DefaultLeaderElections created = new DefaultLeaderElections(template, LEASE, (event) -> {
			});
			created.start();
			elections.add(created);
		}
		System.out.printf(Locale.ROOT, "%n## %s: %d instances, %d groups, lease %d s, poll interval %d ms%n%n", server,
				INSTANCES, GROUPS, LEASE.toSeconds(), LockSettings.DEFAULT_POLL_INTERVAL.toMillis());
		System.out.println("| window | commands/s | server CPU ms/s | clients' CPU ms/s | commands |");
		System.out.println("|---|---|---|---|---|");
		Thread.sleep(2000);
		window("connected, no group", cpuKey, commands, seconds);
		List<Leadership> joined = new ArrayList<>();
		for (DefaultLeaderElections instance : elections) {
			for (int g = 0; g < GROUPS; g++) {
				joined.add(instance.join("idle-" + g));
			}
		}
		long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
		while (joined.stream().filter(Leadership::isLeader).count() < GROUPS && System.nanoTime() < deadline) {
			Thread.sleep(50);
		}
		long leaders = joined.stream().filter(Leadership::isLeader).count();
		if (leaders != GROUPS) {
			throw new IllegalStateException(leaders + " leaders for " + GROUPS + " groups after 30 s");
		}
		Thread.sleep(2000);
		window(GROUPS + " groups led, " + (INSTANCES - 1) * GROUPS + " followers", cpuKey, commands, seconds);
		elections.forEach(DefaultLeaderElections::close);
		templates.forEach(DefaultLockTemplate::close);
	}

	private static void window(String name, String cpuKey, Supplier<Map<String, Long>> commands, long seconds)
			throws InterruptedException {
		Map<String, Long> before = commands.get();
		long serverBefore = ServerCpu.nanos(cpuKey);
		long clientsBefore = ServerCpu.processNanos();
		long start = System.nanoTime();
		Thread.sleep(seconds * 1000);
		double elapsed = (System.nanoTime() - start) / 1e9;
		long clients = ServerCpu.processNanos() - clientsBefore;
		long serverCpu = ServerCpu.nanos(cpuKey) - serverBefore;
		Map<String, Long> after = commands.get();
		Map<String, Long> delta = new TreeMap<>();
		after.forEach((command, calls) -> {
			long d = calls - before.getOrDefault(command, 0L);
			if (d > 0) {
				delta.put(command, d);
			}
		});
		long total = delta.values().stream().mapToLong(Long::longValue).sum();
		StringBuilder breakdown = new StringBuilder();
		delta.forEach((command, calls) -> breakdown.append(breakdown.isEmpty() ? "" : ", ")
			.append(command)
			.append(' ')
			.append(String.format(Locale.ROOT, "%.1f/s", calls / elapsed)));
		System.out.printf(Locale.ROOT, "| %s | %.1f | %.2f | %.2f | %s |%n", name, total / elapsed,
				serverCpu / 1e6 / elapsed, clients / 1e6 / elapsed, breakdown);
	}

	/** Calls per command since the server started, without {@code info} (this probe's own). */
	private static Map<String, Long> redisCalls(String commandstats) {
		Map<String, Long> calls = new TreeMap<>();
		Matcher matcher = CALLS.matcher(commandstats);
		while (matcher.find()) {
			if (!matcher.group(1).equals("info")) {
				calls.put(matcher.group(1), Long.parseLong(matcher.group(2)));
			}
		}
		return calls;
	}

	/** Transactions of every database since the statistics were reset (flushed by backends within a second). */
	private static Map<String, Long> postgresTransactions(Connection probe) {
		try (Statement statement = probe.createStatement();
				ResultSet result = statement.executeQuery(
						"SELECT sum(xact_commit), sum(xact_rollback) FROM pg_stat_database")) {
			result.next();
			// this probe's own SELECT commits one transaction per read: two per window, negligible
			return Map.of("commit", result.getLong(1), "rollback", result.getLong(2));
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
	}

	private static void closeQuietly(LockBackend backend) {
		if (backend instanceof AutoCloseable closeable) {
			try {
				closeable.close();
			}
			catch (Exception ex) {
				// closing after the measurement: nothing to report
			}
		}
	}

}
