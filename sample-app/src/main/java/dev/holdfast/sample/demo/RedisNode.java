package dev.holdfast.sample.demo;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A {@code redis-server} from the PATH that the demo starts for its Redlock run: one of several
 * independent masters, with an append-only file in its own directory.
 */
final class RedisNode {

	private final int port;

	private final Path log;

	private final Process process;

	private RedisNode(int port, Path log, Process process) {
		this.port = port;
		this.log = log;
		this.process = process;
	}

	/**
	 * Starts a server on {@code port} with its files under {@code dir} and waits until it
	 * answers {@code PING}.
	 * @throws IllegalStateException if {@code redis-server} is not on the PATH or does not start
	 */
	static RedisNode start(int port, Path dir, Duration timeout) throws IOException, InterruptedException {
		Files.createDirectories(dir);
		Path log = dir.resolve("redis.log");
		Process process;
		try {
			process = new ProcessBuilder("redis-server", "--port", Integer.toString(port), "--bind", "127.0.0.1",
					"--dir", dir.toString(), "--appendonly", "yes", "--save", "")
				.redirectErrorStream(true)
				.redirectOutput(log.toFile())
				.start();
		}
		catch (IOException ex) {
			throw new IllegalStateException("--profile=redlock starts three redis-servers, but redis-server could "
					+ "not be run (" + ex.getMessage() + "): install Redis so that redis-server is on the PATH");
		}
		RedisNode node = new RedisNode(port, log, process);
		long deadline = System.nanoTime() + timeout.toNanos();
		while (System.nanoTime() < deadline) {
			if (!process.isAlive()) {
				throw new IllegalStateException("redis-server on port " + port + " exited with status "
						+ process.exitValue() + "; see " + log);
			}
			if (node.ping()) {
				return node;
			}
			Thread.sleep(100);
		}
		node.stop();
		throw new IllegalStateException("redis-server on port " + port + " did not answer within "
				+ timeout.toSeconds() + " s; see " + log);
	}

	private boolean ping() {
		try (Socket socket = new Socket()) {
			socket.connect(new InetSocketAddress("127.0.0.1", this.port), 1000);
			socket.setSoTimeout(1000);
			OutputStream out = socket.getOutputStream();
			out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
			out.flush();
			InputStream in = socket.getInputStream();
			byte[] reply = in.readNBytes(7);
			return new String(reply, StandardCharsets.US_ASCII).equals("+PONG\r\n");
		}
		catch (IOException ex) {
			return false;
		}
	}

	/** The node's address as {@code holdfast.redlock.nodes} takes it. */
	String address() {
		return "redis://127.0.0.1:" + this.port;
	}

	Path log() {
		return this.log;
	}

	/** Stops the server. Never throws. */
	void stop() {
		this.process.destroy();
		try {
			if (!this.process.waitFor(10, TimeUnit.SECONDS)) {
				this.process.destroyForcibly();
			}
		}
		catch (InterruptedException ex) {
			this.process.destroyForcibly();
			Thread.currentThread().interrupt();
		}
	}

}
