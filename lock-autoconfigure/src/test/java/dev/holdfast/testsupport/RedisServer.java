package dev.holdfast.testsupport;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code redis-server} process on a free loopback port, started and stopped by a test.
 * Uses {@code $REDIS_SERVER} if set, else {@code redis-server} from the PATH, else the binary
 * shipped in the {@code com.github.codemonstur:embedded-redis} test dependency (always that one
 * when the system property {@value #FORCE_EMBEDDED_PROPERTY} is {@code true}).
 */
public final class RedisServer implements AutoCloseable {

	/** System property that, when {@code true}, skips the PATH and uses the embedded binary. */
	public static final String FORCE_EMBEDDED_PROPERTY = "holdfast.test.redis.embedded";

	private final int port;

	private final Path dir;

	private final boolean persistent;

	private boolean cluster;

	private Process process;

	private RedisServer(int port, Path dir, boolean persistent) {
		this.port = port;
		this.dir = dir;
		this.persistent = persistent;
	}

	/**
	 * Starts a one-node Redis Cluster without persistence: the node serves all 16384 slots, so
	 * cluster clients work and multi-key commands across slots fail with {@code CROSSSLOT}, as on
	 * a real cluster.
	 */
	public static RedisServer startCluster() {
		try {
			RedisServer server = new RedisServer(freePort(), Files.createTempDirectory("holdfast-redis"), false);
			server.cluster = true;
			server.startProcess();
			server.assignAllSlots();
			return server;
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not start redis-server in cluster mode", ex);
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
		try {
			RedisServer server = new RedisServer(freePort(), Files.createTempDirectory("holdfast-redis"), persistent);
			server.startProcess();
			return server;
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not start redis-server", ex);
		}
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
		List<String> command = new ArrayList<>(List.of(executable(), "--port", Integer.toString(this.port), "--bind",
				"127.0.0.1", "--dir", this.dir.toString(), "--save", "", "--daemonize", "no", "--loglevel",
				"warning"));
		if (this.cluster) {
			command.addAll(List.of("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"));
		}
		if (this.persistent) {
			command.addAll(List.of("--appendonly", "yes", "--appendfsync", "always"));
		}
		else {
			command.addAll(List.of("--appendonly", "no"));
		}
		ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true)
			.redirectOutput(this.dir.resolve("redis.log").toFile());
		this.process = builder.start();
		long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
		while (System.nanoTime() < deadline) {
			if (!this.process.isAlive()) {
				throw new IllegalStateException("redis-server exited at start: " + log());
			}
			if (ping()) {
				return;
			}
			sleep(20);
		}
		throw new IllegalStateException("redis-server did not answer PING within 10s: " + log());
	}

	private void assignAllSlots() throws IOException {
		List<String> command = new ArrayList<>(List.of("CLUSTER", "ADDSLOTS"));
		for (int slot = 0; slot < 16384; slot++) {
			command.add(Integer.toString(slot));
		}
		String reply = send(command);
		if (!reply.startsWith("+OK")) {
			throw new IllegalStateException("CLUSTER ADDSLOTS failed: " + reply);
		}
		long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
		while (System.nanoTime() < deadline) {
			if (send(List.of("CLUSTER", "INFO")).contains("cluster_state:ok")) {
				return;
			}
			sleep(20);
		}
		throw new IllegalStateException("Redis cluster did not reach cluster_state:ok within 10s: " + log());
	}

	private String send(List<String> command) throws IOException {
		StringBuilder request = new StringBuilder("*").append(command.size()).append("\r\n");
		for (String argument : command) {
			request.append('$').append(argument.length()).append("\r\n").append(argument).append("\r\n");
		}
		try (Socket socket = new Socket()) {
			socket.connect(new InetSocketAddress("127.0.0.1", this.port), 1000);
			socket.setSoTimeout(2000);
			socket.getOutputStream().write(request.toString().getBytes(StandardCharsets.US_ASCII));
			socket.getOutputStream().flush();
			byte[] buffer = new byte[8192];
			int read = socket.getInputStream().read(buffer);
			return (read > 0) ? new String(buffer, 0, read, StandardCharsets.US_ASCII) : "";
		}
	}

	private boolean ping() {
		try (Socket socket = new Socket()) {
			socket.connect(new InetSocketAddress("127.0.0.1", this.port), 200);
			socket.setSoTimeout(500);
			OutputStream out = socket.getOutputStream();
			out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
			out.flush();
			InputStream in = socket.getInputStream();
			byte[] buffer = new byte[16];
			int read = in.read(buffer);
			return read > 0 && new String(buffer, 0, read, StandardCharsets.US_ASCII).startsWith("+PONG");
		}
		catch (IOException ex) {
			return false;
		}
	}

	private String log() {
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

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
			socket.setReuseAddress(true);
			return socket.getLocalPort();
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
