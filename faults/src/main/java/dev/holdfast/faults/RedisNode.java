package dev.holdfast.faults;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.Map;

import dev.holdfast.test.server.RedisServer;

/**
 * A {@code redis-server} process ({@link RedisServer} of the test kit: {@code $REDIS_SERVER} or
 * the one on the PATH) on a free loopback port, with its data and log under the run's directory,
 * that the suite starts, pauses, kills and restarts. Every process it starts is registered with
 * {@link Processes}, so that an early exit of the suite kills it.
 */
final class RedisNode implements AutoCloseable {

	private final RedisServer server;

	private RedisNode(RedisServer server) {
		this.server = server;
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
		boolean fakeClock = environment.containsKey("LD_PRELOAD");
		return new RedisNode(RedisServer.builder()
			.directory(dir)
			.persistent(persistent)
			.environment(environment)
			.onStart((process) -> {
				Processes.register(process);
				if (fakeClock) {
					FakeClock.watch(process);
				}
			})
			.start());
	}

	String uri() {
		return this.server.uri();
	}

	/** SIGKILL, as a crash. */
	void kill() {
		this.server.resume();
		this.server.kill();
	}

	/** Starts the process again on the same port and directory (same data if persistent). */
	void start() throws IOException {
		this.server.restart();
	}

	void pause() {
		this.server.pause();
	}

	void resume() {
		this.server.resume();
	}

	@Override
	public void close() {
		kill();
	}

	static int freePort() throws IOException {
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
