package dev.holdfast.test.server;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

/**
 * A real {@code redis-server} process on a free loopback port, started and stopped by a test.
 * Uses {@code $REDIS_SERVER} if set, else {@code redis-server} from the PATH, else the binary
 * shipped in {@code com.github.codemonstur:embedded-redis}, an optional dependency of this module
 * that a test adds where no Redis is installed (always that binary when the system property
 * {@value #FORCE_EMBEDDED_PROPERTY} is {@code true}).
 */
public final class RedisServer implements AutoCloseable {

	/** System property that, when {@code true}, skips the PATH and uses the embedded binary. */
	public static final String FORCE_EMBEDDED_PROPERTY = "holdfast.test.redis.embedded";

	// Generous: a loaded machine, or a process under a fake clock, takes seconds to answer.
	private static final Duration START_TIMEOUT = Duration.ofSeconds(15);

	private final int port;

	private final Path dir;

	private final boolean persistent;

	/** Arguments after the executable and before the common ones (a sentinel's config file). */
	private List<String> leading = List.of();

	/** Arguments after the common ones, as given to {@link #startWith}. */
	private List<String> trailing = List.of();

	/** Added to the environment of every process started (the first and every restart). */
	private Map<String, String> environment = Map.of();

	/** Told about every process started (the first and every restart). */
	private Consumer<Process> onStart = (process) -> {
	};

	private Process process;

	private RedisServer(int port, Path dir, boolean persistent) {
		this.port = port;
		this.dir = dir;
		this.persistent = persistent;
	}

	/**
	 * Starts a server with options beyond those of {@link #start(boolean)}: its directory, its
	 * process environment, and a callback for each process started.
	 */
	public static Builder builder() {
		return new Builder();
	}

	/**
	 * Starts a server without persistence, with {@code arguments} appended to the command line
	 * (for example {@code --cluster-enabled yes} or {@code --replicaof 127.0.0.1 <port>}); they
	 * are kept for {@link #restart()}.
	 */
	public static RedisServer startWith(List<String> arguments) {
		return builder().arguments(arguments).start();
	}

	/**
	 * Starts a replica of {@code primary} (without persistence) and waits, at most 30 s, until its
	 * link to the primary is up, so that writes from then on reach it.
	 */
	public static RedisServer startReplicaOf(RedisServer primary) {
		RedisServer replica = startWith(List.of("--replicaof", "127.0.0.1", Integer.toString(primary.port())));
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
		while (!"up".equals(replica.info("replication", "master_link_status"))) {
			if (System.nanoTime() > deadline) {
				replica.close();
				throw new IllegalStateException("The replica of " + primary.uri() + " did not sync within 30 s");
			}
			try {
				Thread.sleep(10);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				replica.close();
				throw new IllegalStateException("Interrupted while waiting for a replica to sync", ex);
			}
		}
		return replica;
	}

	/**
	 * Starts a Sentinel ({@code redis-server <config> --sentinel}) whose configuration file holds
	 * {@code config} (for example {@code sentinel monitor ...} lines); Sentinel rewrites that file
	 * as it learns the topology.
	 */
	public static RedisServer startSentinel(String config) {
		try {
			Path dir = Files.createTempDirectory("holdfast-sentinel");
			Path file = dir.resolve("sentinel.conf");
			Files.writeString(file, config);
			RedisServer server = new RedisServer(FreePorts.next(), dir, false);
			server.leading = List.of(file.toString(), "--sentinel");
			server.startProcess();
			return server;
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not start redis-server --sentinel", ex);
		}
	}

	/** Starts a server without persistence. */
	public static RedisServer start() {
		return start(false);
	}

	/**
	 * Starts a server.
	 * @param persistent whether the server keeps its data in an append-only file with
	 * {@code appendfsync always}, so that a restart keeps what was acknowledged
	 */
	public static RedisServer start(boolean persistent) {
		return builder().persistent(persistent).start();
	}

	public int port() {
		return this.port;
	}

	public String uri() {
		return "redis://127.0.0.1:" + this.port;
	}

	public boolean isRunning() {
		return this.process != null && this.process.isAlive();
	}

	public long pid() {
		return this.process.pid();
	}

	/** {@code 127.0.0.1:<port>}. */
	public String address() {
		return "127.0.0.1:" + this.port;
	}

	/**
	 * Sends one command on a new connection and returns the reply: a {@code String} for simple
	 * and bulk strings, a {@code Long} for integers, a {@code List} for arrays, {@code null} for
	 * a null reply.
	 * @throws IllegalStateException for an error reply or when the server does not answer
	 * within two seconds
	 */
	public @Nullable Object command(String... arguments) {
		try {
			return RespClient.send(this.port, List.of(arguments));
		}
		catch (IOException ex) {
			throw new IllegalStateException("Redis " + address() + " did not answer " + arguments[0], ex);
		}
	}

	/** {@link #command} for a command whose reply is a string (or {@code null}). */
	public @Nullable String commandString(String... arguments) {
		Object reply = command(arguments);
		return (reply != null) ? reply.toString() : null;
	}

	/**
	 * One field of {@code INFO <section>}, e.g. {@code info("replication", "role")}, or
	 * {@code null} if absent.
	 */
	public @Nullable String info(String section, String field) {
		String reply = commandString("INFO", section);
		for (String line : (reply != null) ? reply.split("\r\n") : new String[0]) {
			if (line.startsWith(field + ":")) {
				return line.substring(field.length() + 1);
			}
		}
		return null;
	}

	/** Kills the process with SIGKILL, as a crash would. */
	public void kill() {
		if (this.process != null) {
			this.process.destroyForcibly();
			waitFor(this.process);
		}
	}

	/** Starts the process again on the same port (and, if persistent, the same data). */
	public void restart() {
		kill();
		try {
			startProcess();
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not restart redis-server", ex);
		}
	}

	/** Pauses the process with SIGSTOP: it keeps its socket but answers nothing. */
	public void pause() {
		signal("STOP");
	}

	/** Resumes a paused process with SIGCONT. */
	public void resume() {
		signal("CONT");
	}

	@Override
	public void close() {
		resume();
		kill();
	}

	private void signal(String name) {
		if (this.process == null || !this.process.isAlive()) {
			return;
		}
		try {
			new ProcessBuilder("kill", "-" + name, Long.toString(this.process.pid())).start().waitFor(5,
					TimeUnit.SECONDS);
		}
		catch (IOException ex) {
			throw new IllegalStateException(ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private void startProcess() throws IOException {
		List<String> command = new ArrayList<>();
		command.add(executable());
		command.addAll(this.leading);
		command.addAll(List.of("--port", Integer.toString(this.port), "--bind", "127.0.0.1", "--dir",
				this.dir.toString(), "--save", "", "--daemonize", "no", "--loglevel", "warning"));
		if (this.persistent) {
			command.addAll(List.of("--appendonly", "yes", "--appendfsync", "always"));
		}
		else {
			command.addAll(List.of("--appendonly", "no"));
		}
		command.addAll(this.trailing);
		ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
			.redirectOutput(ProcessBuilder.Redirect.appendTo(this.dir.resolve("redis.log").toFile()));
		builder.environment().putAll(this.environment);
		this.process = builder.start();
		this.onStart.accept(this.process);
		long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
		while (System.nanoTime() < deadline) {
			if (!this.process.isAlive()) {
				throw new IllegalStateException("redis-server exited at start: " + log());
			}
			if (RespClient.ping(this.port)) {
				return;
			}
			sleep(20);
		}
		throw new IllegalStateException("redis-server did not answer PING within " + START_TIMEOUT.toSeconds()
				+ "s: " + log());
	}

	/** The server's log so far, for failure messages. */
	public String log() {
		try {
			return Files.readString(this.dir.resolve("redis.log"));
		}
		catch (IOException ex) {
			return "(no log)";
		}
	}

	private static String executable() {
		String configured = System.getenv("REDIS_SERVER");
		if (configured != null && !configured.isBlank()) {
			return configured;
		}
		if (!Boolean.getBoolean(FORCE_EMBEDDED_PROPERTY)) {
			for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
				File candidate = new File(dir, "redis-server");
				if (candidate.canExecute()) {
					return candidate.getAbsolutePath();
				}
			}
		}
		return EmbeddedBinary.PATH;
	}

	/** Options of a server to start; see {@link RedisServer#builder()}. */
	public static final class Builder {

		private @Nullable Path directory;

		private boolean persistent;

		private List<String> arguments = List.of();

		private Map<String, String> environment = Map.of();

		private Consumer<Process> onStart = (process) -> {
		};

		private Builder() {
		}

		/**
		 * The directory of the server's data and its log ({@code redis.log}, appended to across
		 * restarts), created if absent; by default a new temporary directory.
		 */
		public Builder directory(Path directory) {
			this.directory = directory;
			return this;
		}

		/**
		 * Whether the server keeps its data in an append-only file with {@code appendfsync always},
		 * so that a restart keeps what was acknowledged; {@code false} by default.
		 */
		public Builder persistent(boolean persistent) {
			this.persistent = persistent;
			return this;
		}

		/** Arguments appended to the command line, as {@link RedisServer#startWith} takes them. */
		public Builder arguments(List<String> arguments) {
			this.arguments = List.copyOf(arguments);
			return this;
		}

		/**
		 * Variables added to the environment of the server's process and of every restart of it
		 * (for example an {@code LD_PRELOAD} library that fakes its clock).
		 */
		public Builder environment(Map<String, String> environment) {
			this.environment = Map.copyOf(environment);
			return this;
		}

		/**
		 * Called with every process started, the first and each restart, before it answers; for
		 * example to register it for cleanup when the test JVM exits.
		 */
		public Builder onStart(Consumer<Process> onStart) {
			this.onStart = onStart;
			return this;
		}

		/**
		 * Starts the server and returns once it answers {@code PING}. A port taken between choosing
		 * it and binding it (another process, or a cluster bus port, the port + 10000, that is in
		 * use) is replaced by a new one, three times at most.
		 */
		public RedisServer start() {
			try {
				Path dir = (this.directory != null) ? Files.createDirectories(this.directory)
						: Files.createTempDirectory("holdfast-redis");
				for (int attempt = 1;; attempt++) {
					RedisServer server = new RedisServer(FreePorts.next(), dir, this.persistent);
					server.trailing = this.arguments;
					server.environment = this.environment;
					server.onStart = this.onStart;
					try {
						server.startProcess();
						return server;
					}
					catch (IllegalStateException ex) {
						if (attempt == 3 || ex.getMessage() == null || !ex.getMessage().contains("Address already in use")) {
							throw ex;
						}
					}
				}
			}
			catch (IOException ex) {
				throw new IllegalStateException("Could not start redis-server", ex);
			}
		}

	}

	/**
	 * The redis-server binary shipped in the {@code com.github.codemonstur:embedded-redis} jar
	 * (a test dependency), extracted once per JVM to an executable temporary file.
	 */
	private static final class EmbeddedBinary {

		static final String PATH = extract();

		private static String extract() {
			String resource = resourceName();
			try (InputStream in = RedisServer.class.getClassLoader().getResourceAsStream(resource)) {
				if (in == null) {
					throw new IllegalStateException("No redis-server on the PATH and no resource '" + resource
							+ "' on the classpath; install Redis, set REDIS_SERVER, or add the embedded-redis test dependency");
				}
				Path file = Files.createTempFile("holdfast-redis-server", "");
				file.toFile().deleteOnExit();
				Files.copy(in, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
				if (!file.toFile().setExecutable(true)) {
					throw new IllegalStateException("Could not make " + file + " executable");
				}
				return file.toString();
			}
			catch (IOException ex) {
				throw new IllegalStateException("Could not extract " + resource, ex);
			}
		}

		private static String resourceName() {
			String os = System.getProperty("os.name").toLowerCase(java.util.Locale.ROOT);
			String arch = System.getProperty("os.arch").toLowerCase(java.util.Locale.ROOT);
			boolean arm = arch.contains("aarch64") || arch.contains("arm");
			if (os.contains("mac")) {
				return arm ? "redis-server-6.2.6-v5-darwin-arm64" : "redis-server-6.2.6-v5-darwin-amd64";
			}
			if (os.contains("linux")) {
				if (arm) {
					return "redis-server-6.2.7-linux-arm64";
				}
				return arch.contains("64") ? "redis-server-6.2.6-v5-linux-amd64" : "redis-server-6.2.7-linux-386";
			}
			throw new IllegalStateException("No embedded redis-server for " + os + "/" + arch
					+ "; install Redis or set REDIS_SERVER");
		}

	}

	private static void waitFor(Process process) {
		try {
			process.waitFor(10, TimeUnit.SECONDS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	private static void sleep(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

}
