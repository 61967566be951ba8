package dev.holdfast.faults;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A {@code redis-server} process ({@code $REDIS_SERVER} or the one on the PATH) on a free loopback
 * port, that the suite starts, pauses, kills and restarts through its own {@link Process} handle.
 */
final class RedisNode implements AutoCloseable {

	private final int port;

	private final Path dir;

	private final boolean persistent;

	private final Map<String, String> environment;

	private Process process;

	private RedisNode(int port, Path dir, boolean persistent, Map<String, String> environment) {
		this.port = port;
		this.dir = dir;
		this.persistent = persistent;
		this.environment = environment;
	}

	/**
	 * Starts a node.
	 * @param persistent whether the node keeps its data in an append-only file with
	 * {@code appendfsync always}, so that a restart keeps every acknowledged write
	 */
	static RedisNode start(Path dir, boolean persistent) throws IOException {
		return start(dir, persistent, Map.of());
	}

	/**
	 * Starts a node whose process (and every restart of it) gets {@code environment} added, e.g.
	 * {@link FakeClock#environment()} to run it on a clock that a fault moves.
	 */
	static RedisNode start(Path dir, boolean persistent, Map<String, String> environment) throws IOException {
		Files.createDirectories(dir);
		RedisNode node = new RedisNode(freePort(), dir, persistent, Map.copyOf(environment));
		node.startProcess();
		return node;
	}

	String uri() {
		return "redis://127.0.0.1:" + this.port;
	}

	boolean persistent() {
		return this.persistent;
	}

	/** SIGKILL, as a crash. */
	void kill() {
		if (this.process != null && this.process.isAlive()) {
			Signals.send(this.process.pid(), "CONT");
			this.process.destroyForcibly();
			try {
				this.process.waitFor(10, TimeUnit.SECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	/** Starts the process again on the same port and directory (same data if persistent). */
	void start() throws IOException {
		startProcess();
	}

	void pause() {
		Signals.send(this.process.pid(), "STOP");
	}

	void resume() {
		Signals.send(this.process.pid(), "CONT");
	}

	@Override
	public void close() {
		kill();
	}

	private void startProcess() throws IOException {
		List<String> command = new ArrayList<>(List.of(executable(), "--port", Integer.toString(this.port), "--bind",
				"127.0.0.1", "--dir", this.dir.toString(), "--save", "", "--daemonize", "no", "--loglevel",
				"warning"));
		if (this.persistent) {
			command.addAll(List.of("--appendonly", "yes", "--appendfsync", "always"));
		}
		else {
			command.addAll(List.of("--appendonly", "no"));
		}
		ProcessBuilder builder = new ProcessBuilder(command);
		builder.environment().putAll(this.environment);
		this.process = builder.redirectErrorStream(true)
			.redirectOutput(ProcessBuilder.Redirect.appendTo(this.dir.resolve("redis.log").toFile()))
			.start();
		Processes.register(this.process);
		if (this.environment.containsKey("LD_PRELOAD")) {
			FakeClock.watch(this.process);
		}
		long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
		while (System.nanoTime() < deadline) {
			if (!this.process.isAlive()) {
				throw new IllegalStateException("redis-server exited at start, see " + this.dir.resolve("redis.log"));
			}
			if (ping()) {
				return;
			}
			sleep(20);
		}
		throw new IllegalStateException("redis-server did not answer PING within 15s");
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

	private static String executable() {
		String configured = System.getenv("REDIS_SERVER");
		return (configured != null && !configured.isBlank()) ? configured : "redis-server";
	}

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			return socket.getLocalPort();
		}
	}

	static void sleep(long millis) {
		try {
			Thread.sleep(millis);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

}
