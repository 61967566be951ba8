package dev.holdfast.bench;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;

import dev.holdfast.test.server.PostgresServer;

/**
 * The PostgreSQL the JDBC contenders share: an embedded one ({@link PostgresServer}, binaries from
 * Maven Central), or with {@code -Dbench.pg=local} the server on 127.0.0.1:5432 (trust auth,
 * database {@code test}).
 * Creates each contender's table, empty.
 */
final class Postgres implements AutoCloseable {

	final String url;

	final String user;

	private final PostgresServer embedded;

	private Postgres(String url, String user, PostgresServer embedded) {
		this.url = url;
		this.user = user;
		this.embedded = embedded;
	}

	static Postgres start(String mode) throws Exception {
		if ("local".equals(mode)) {
			return new Postgres(System.getProperty("bench.jdbc.url", "jdbc:postgresql://127.0.0.1:5432/test"),
					System.getProperty("bench.jdbc.user", "postgres"), null);
		}
		PostgresServer embedded = PostgresServer.start();
		return new Postgres(embedded.jdbcUrl(), "postgres", embedded);
	}

	String description() {
		return (this.embedded != null) ? "embedded PostgreSQL (zonky), " + this.url : "local PostgreSQL, " + this.url;
	}

	/**
	 * The postmaster's process id: the parent of the backend that serves a connection. Its
	 * children are all of the server's processes ({@link ServerCpu}).
	 */
	long postmasterPid() throws Exception {
		try (Connection connection = DriverManager.getConnection(this.url, this.user, "");
				Statement statement = connection.createStatement();
				var result = statement.executeQuery("SELECT pg_backend_pid()")) {
			result.next();
			long backend = result.getLong(1);
			// asked while the connection is open: the backend exits with it
			return ProcessHandle.of(backend)
				.flatMap(ProcessHandle::parent)
				.map(ProcessHandle::pid)
				.orElseThrow(() -> new IllegalStateException("No parent process of PostgreSQL backend " + backend));
		}
	}

	/** Drops and creates the tables of every JDBC contender. */
	void createTables() throws Exception {
		try (Connection connection = DriverManager.getConnection(this.url, this.user, "");
				Statement statement = connection.createStatement()) {
			statement.execute("DROP TABLE IF EXISTS holdfast_lock, shedlock, int_lock, bench_floor_lock");
			String holdfast = holdfastSchema();
			if (holdfast != null) {
				statement.execute(holdfast);
			}
			statement.execute("CREATE TABLE shedlock (name VARCHAR(64) NOT NULL PRIMARY KEY, lock_until TIMESTAMP NOT NULL, "
					+ "locked_at TIMESTAMP NOT NULL, locked_by VARCHAR(255) NOT NULL)");
			statement.execute("CREATE TABLE int_lock (lock_key CHAR(36) NOT NULL, region VARCHAR(100) NOT NULL, "
					+ "client_id CHAR(36), created_date TIMESTAMP NOT NULL, expired_after TIMESTAMP NOT NULL, "
					+ "CONSTRAINT int_lock_pk PRIMARY KEY (lock_key, region))");
			statement.execute("CREATE TABLE bench_floor_lock (lock_key VARCHAR(255) NOT NULL PRIMARY KEY, "
					+ "owner_token VARCHAR(255) NOT NULL, expires_at TIMESTAMPTZ NOT NULL)");
		}
	}

	/** The schema script that ships in Holdfast's jar, or null while the JDBC backend is not in the build. */
	private static String holdfastSchema() throws Exception {
		try (InputStream in = Postgres.class.getClassLoader()
			.getResourceAsStream("dev/holdfast/jdbc/schema-postgresql.sql")) {
			if (in == null) {
				return null;
			}
			StringBuilder sql = new StringBuilder();
			for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
				if (!line.trim().startsWith("--")) {
					sql.append(line).append('\n');
				}
			}
			return sql.toString().trim().replaceAll(";\\s*$", "");
		}
	}

	@Override
	public void close() throws Exception {
		if (this.embedded != null) {
			this.embedded.close();
		}
	}

}
