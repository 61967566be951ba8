package dev.holdfast.bench;

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
 * A real {@code redis-server} process on a free loopback port, started and stopped by the benchmark runner
 * (the idea of the test support class in lock-autoconfigure, copied: benchmarks do not depend on test jars).
 * Uses {@code redis-server} from the PATH (or {@code $REDIS_SERVER}).
 */
public final class RedisServer implements AutoCloseable {

	private final int port;

	private final Path dir;

	private final boolean persistent;

	private Process process;

	private RedisServer(int port, Path dir, boolean persistent) {
		this.port = port;
		this.dir = dir;
		this.persistent = persistent;
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
		for (String dir : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
			File candidate = new File(dir, "redis-server");
			if (candidate.canExecute()) {
				return candidate.getAbsolutePath();
			}
		}
		throw new IllegalStateException("No redis-server on the PATH; install Redis or set REDIS_SERVER");
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
