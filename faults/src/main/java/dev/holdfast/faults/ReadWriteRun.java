package dev.holdfast.faults;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.function.BiPredicate;

/**
 * A read-write fault run: the lock backend (a {@code redis-server}, PostgreSQL, or a ZooKeeper
 * ensemble of three), a Redis holding the {@link ReadWriteResource} that no fault touches, and
 * {@link ReadWriteFaultClient} JVMs, each with reader and writer threads on one lock. The
 * controller reads the clients' logs as they grow, stops (SIGSTOP), resumes and kills clients,
 * and at the end checks the logs and the resource's history with {@link ReadWriteChecker}. Every
 * process is started here, stopped by {@link #close()} through its handle, and covered by the
 * shutdown hook of {@link Processes}.
 */
final class ReadWriteRun implements AutoCloseable {

	static final String LOCK = "faults-read-write";

	/** How recent a writer's grant must be for a fault to strike before its write (it works 40 ms after its read). */
	private static final long FRESH_WRITE_NANOS = Duration.ofMillis(25).toNanos();

	/** How recent a reader's grant must be for a fault to strike with nearly a whole lease left. */
	private static final long FRESH_READ_NANOS = Duration.ofMillis(60).toNanos();

	private final Path dir;

	private final String backendType;

	private final long leaseMs;

	private final List<AutoCloseable> servers = new ArrayList<>();

	private final List<Client> clients = new ArrayList<>();

	private final PrintWriter controllerLog;

	private String nodes;

	private String resourceUri;

	/** A client JVM, its log and the events read from it so far. */
	static final class Client {

		private final Process process;

		private final Path log;

		private final List<Checker.Event> events = new ArrayList<>();

		private long offset;

		Client(Process process, Path log) {
			this.process = process;
			this.log = log;
		}

		long pid() {
			return this.process.pid();
		}

		/** Reads the complete lines appended since the last call. */
		void poll() throws IOException {
			if (!Files.exists(this.log)) {
				return;
			}
			try (RandomAccessFile file = new RandomAccessFile(this.log.toFile(), "r")) {
				byte[] bytes = new byte[(int) (file.length() - this.offset)];
				file.seek(this.offset);
				file.readFully(bytes);
				int end = new String(bytes, StandardCharsets.UTF_8).lastIndexOf('\n') + 1;
				for (String line : new String(bytes, 0, end, StandardCharsets.UTF_8).split("\n")) {
					if (!line.isBlank()) {
						this.events.add(Checker.Event.parse(line));
					}
				}
				this.offset += end;
			}
		}

		/** The last event of {@code thread} read so far (of {@code type}, unless null), or null. */
		Checker.Event last(String thread, String type) {
			for (int i = this.events.size() - 1; i >= 0; i--) {
				Checker.Event event = this.events.get(i);
				if (event.fields().length > 0 && event.fields()[0].equals(thread)
						&& (type == null || event.type().equals(type))) {
					return event;
				}
			}
			return null;
		}

		/** The latest validity end that a reader of this client logged with its grant (monotonic nanoseconds). */
		long readValidityEnd() {
			return this.events.stream()
				.filter((event) -> event.type().equals("RACQ"))
				.mapToLong((event) -> Long.parseLong(event.fields()[2]))
				.max()
				.orElse(Long.MIN_VALUE);
		}

	}

	/** A client stopped by SIGSTOP early in a hold of {@code thread}, granted at {@code grant}. */
	record Stopped(Client client, String thread, Checker.Event grant, long leaseMs) {

		long token() {
			return Long.parseLong(this.grant.fields()[1]);
		}

	}

	private ReadWriteRun(Path dir, String backendType, long leaseMs) throws IOException {
		this.dir = dir;
		this.backendType = backendType;
		this.leaseMs = leaseMs;
		this.controllerLog = new PrintWriter(
				Files.newBufferedWriter(dir.resolve("controller.log"), StandardCharsets.UTF_8));
	}

	/**
	 * Starts the servers and {@code clients} clients, logs under {@code baseDir/name}; returns once
	 * each client read and wrote.
	 */
	static ReadWriteRun start(Path baseDir, String name, String backendType, long leaseMs, int clients)
			throws Exception {
		Path dir = baseDir.resolve(name);
		FaultRun.deleteRecursively(dir);
		Files.createDirectories(dir);
		ReadWriteRun run = new ReadWriteRun(dir, backendType, leaseMs);
		try {
			RedisNode resource = RedisNode.start(dir.resolve("resource"), false);
			run.servers.add(resource);
			run.resourceUri = resource.uri();
			run.nodes = PermitRun.startServer(dir, backendType, run.servers);
			for (int i = 0; i < clients; i++) {
				run.startClient();
			}
			for (Client client : run.clients) {
				run.await(0, (c, e) -> c == client && e.type().equals("RD"), Duration.ofSeconds(90));
				run.await(0, (c, e) -> c == client && e.type().equals("WR"), Duration.ofSeconds(30));
			}
			return run;
		}
		catch (Exception | Error ex) {
			run.close();
			throw ex;
		}
	}

	long leaseMs() {
		return this.leaseMs;
	}

	/** Starts one more client JVM: 2 readers (hold 30 ms) and 1 writer (works 40 ms). */
	Client startClient() throws IOException {
		int index = this.clients.size();
		Path log = this.dir.resolve("client" + index + ".log");
		List<String> command = new ArrayList<>(Processes.javaCommand(ReadWriteFaultClient.class.getName()));
		command.addAll(List.of("backend=" + this.backendType, "nodes=" + this.nodes, "resource=" + this.resourceUri,
				"lock=" + LOCK, "leaseMs=" + this.leaseMs, "readers=2", "writers=1", "workMs=40", "readMs=30",
				"log=" + log, "stopFile=" + this.dir.resolve("stop")));
		Process process = new ProcessBuilder(command).redirectErrorStream(true)
			.redirectOutput(this.dir.resolve("client" + index + ".out").toFile())
			.start();
		Processes.register(process);
		Client client = new Client(process, log);
		this.clients.add(client);
		return client;
	}

	/** Starts a client in place of a killed one and waits until it read. */
	void replaceClient() throws IOException {
		Client client = startClient();
		await(0, (c, e) -> c == client && e.type().equals("RD"), Duration.ofSeconds(90));
	}

	/** Logs a controller event; returns its stamp. */
	long mark(String event) {
		long at = System.nanoTime();
		this.controllerLog.println(at + " 0 " + event);
		this.controllerLog.flush();
		return at;
	}

	/**
	 * Stops with SIGSTOP a live client one of whose threads was granted a {@code WACQ} or
	 * {@code RACQ} (as {@code type}) less than 25 ms (writer) or 60 ms (reader) ago and has done
	 * nothing since but, for a reader, its read: the fault strikes early in the hold, before a
	 * writer sent its write.
	 */
	Stopped stopFresh(String type) throws IOException {
		long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
		while (System.nanoTime() < deadline) {
			for (Client client : this.clients) {
				if (!client.process.isAlive()) {
					continue;
				}
				client.poll();
				for (String thread : List.of("w0", "r0", "r1")) {
					Checker.Event grant = freshGrant(client, thread, type);
					if (grant == null) {
						continue;
					}
					Signals.send(client.pid(), "STOP");
					client.poll();
					if (grant.equals(freshGrant(client, thread, type))) {
						mark("FAULT SIGSTOP " + client.pid() + " " + thread + " " + type + " " + grant.fields()[1]);
						return new Stopped(client, thread, grant, this.leaseMs);
					}
					Signals.send(client.pid(), "CONT");
				}
			}
			RedisNode.sleep(2);
		}
		throw new IllegalStateException("No client was seen with a fresh " + type + " within 20 s");
	}

	private static Checker.Event freshGrant(Client client, String thread, String type) {
		Checker.Event last = client.last(thread, null);
		if (last == null) {
			return null;
		}
		Checker.Event grant = last.type().equals("RD") ? client.last(thread, "RACQ") : last;
		long freshNanos = type.equals("WACQ") ? FRESH_WRITE_NANOS : FRESH_READ_NANOS;
		boolean fresh = grant != null && grant.type().equals(type) && System.nanoTime() - grant.nanos() < freshNanos;
		return fresh ? grant : null;
	}

	void resume(Client client) {
		Signals.send(client.pid(), "CONT");
	}

	/** SIGKILL, marked {@code KILL pid}; returns the stamp taken just before the signal. */
	long kill(Client client) throws InterruptedException {
		long at = mark("KILL " + client.pid());
		client.process.destroyForcibly();
		client.process.waitFor(10, TimeUnit.SECONDS);
		return at;
	}

	/** The first event after {@code since} (by stamp) of any client that matches, waiting up to {@code timeout}. */
	Checker.Event await(long since, BiPredicate<Client, Checker.Event> match, Duration timeout) throws IOException {
		Checker.Event event = poll(since, match, timeout);
		if (event == null) {
			throw new IllegalStateException("No client logged the awaited event within " + timeout + ", see "
					+ this.dir);
		}
		return event;
	}

	/** As {@link #await}, but {@code null} after {@code timeout}. */
	Checker.Event poll(long since, BiPredicate<Client, Checker.Event> match, Duration timeout) throws IOException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (true) {
			Checker.Event first = null;
			long floor = since - Duration.ofSeconds(1).toNanos();
			for (Client client : this.clients) {
				client.poll();
				// Backwards, down to a second before since: lines are in their stamps' order but for
				// a few stamped before a check (ReadWriteFaultClient), ms apart.
				for (int i = client.events.size() - 1; i >= 0 && client.events.get(i).nanos() > floor; i--) {
					Checker.Event event = client.events.get(i);
					if (event.nanos() > since && match.test(client, event)
							&& (first == null || event.nanos() < first.nanos())) {
						first = event;
					}
				}
			}
			if (first != null) {
				return first;
			}
			if (System.nanoTime() > deadline) {
				return null;
			}
			RedisNode.sleep(5);
		}
	}

	/**
	 * On PostgreSQL, the last statement of each client session idle inside a transaction for more
	 * than a second: what a client stopped in the middle of a lock transaction leaves (its row
	 * locks held); else none.
	 */
	List<String> idleInTransaction() throws SQLException {
		if (!this.backendType.equals("jdbc")) {
			return List.of();
		}
		Properties properties = new Properties();
		properties.setProperty("user", "postgres");
		properties.setProperty("loginTimeout", "5");
		try (Connection connection = DriverManager.getConnection(this.nodes, properties);
				PreparedStatement statement = connection.prepareStatement("SELECT query FROM pg_stat_activity "
						+ "WHERE state = 'idle in transaction' AND application_name = ? "
						+ "AND state_change < now() - interval '1 second'")) {
			statement.setString(1, PostgresNode.CLIENT_APPLICATION);
			List<String> queries = new ArrayList<>();
			try (ResultSet result = statement.executeQuery()) {
				while (result.next()) {
					queries.add(result.getString(1).replaceAll("\\s+", " "));
				}
			}
			return queries;
		}
	}

	/** Stops the clients, writes the resource's history to {@code history.txt} and checks the run. */
	ReadWriteChecker.Report finish(String name) throws Exception {
		stopClients();
		List<String> history;
		try (ReadWriteResource resource = ReadWriteResource.connect(this.resourceUri)) {
			history = resource.history();
		}
		Files.write(this.dir.resolve("history.txt"), history);
		this.controllerLog.flush();
		return ReadWriteChecker.check(name, Checker.read(this.dir), history);
	}

	private void stopClients() throws IOException {
		Path stop = this.dir.resolve("stop");
		if (!Files.exists(stop)) {
			Files.createFile(stop);
		}
		try {
			for (Client client : this.clients) {
				if (client.process.isAlive()) {
					Signals.send(client.pid(), "CONT");
				}
				if (client.process.isAlive() && !client.process.waitFor(15, TimeUnit.SECONDS)) {
					client.process.destroyForcibly();
				}
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	/** Stops the clients (the stop file; SIGKILL after 15 s), then the servers. */
	@Override
	public void close() throws IOException {
		try {
			stopClients();
		}
		finally {
			this.clients.stream().map((c) -> c.process).filter(Process::isAlive).forEach(Process::destroyForcibly);
			for (AutoCloseable server : this.servers) {
				try {
					server.close();
				}
				catch (Exception ex) {
					System.err.println("Could not stop " + server + ": " + ex);
				}
			}
			this.controllerLog.close();
		}
	}

}
