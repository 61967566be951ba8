package dev.holdfast.redlock;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.redisson.config.Credentials;
import org.redisson.config.CredentialsResolver;

import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The script connections of the Redlock backend against real redis-servers: a connection that
 * stops answering without closing is replaced; renewed credentials are sent on the open
 * connection; requests made while a connection opens are sent in the order they were made.
 */
class RedlockConnectionTests {

	@Test
	void aConnectionThatStopsAnsweringWithoutClosingIsReplaced() throws Exception {
		try (RedisServer a = RedisServer.start(); RedisServer b = RedisServer.start(); RedisServer c = RedisServer.start();
				BlackHoleProxy proxy = new BlackHoleProxy(a.port())) {
			RedlockSettings settings = new RedlockSettings(Duration.ofMillis(200), 0.01, Duration.ofMillis(2));
			try (RedlockLockBackend backend = RedlockLockBackend.connect(
					List.of("redis://127.0.0.1:" + proxy.port(), b.uri(), c.uri()), null, null, Duration.ofSeconds(1),
					settings)) {
				assertThat(backend.reachableNodes()).isEqualTo(3);
				int accepted = proxy.accepted.get();
				proxy.blackHoleExisting();
				assertThat(backend.reachableNodes()).isEqualTo(2);
				// Closed after three node timeouts (at least 1 s) without an answer, then opened again.
				await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(100))
					.until(() -> backend.reachableNodes() == 3);
				assertThat(proxy.accepted.get()).isGreaterThan(accepted);
			}
		}
	}

	@Test
	void renewedCredentialsAreSentOnTheOpenConnection() throws Exception {
		try (RedisServer server = RedisServer.start()) {
			server.command("ACL", "SETUSER", "holdfast", "on", "resetpass", ">first", "~*", "&*", "+@all");
			AtomicReference<String> password = new AtomicReference<>("first");
			AtomicReference<CompletableFuture<Void>> renewal = new AtomicReference<>(new CompletableFuture<>());
			Config config = new Config();
			config.setCredentialsResolver(new CredentialsResolver() {
				@Override
				public CompletionStage<Credentials> resolve(InetSocketAddress address) {
					return CompletableFuture.completedFuture(new Credentials("holdfast", password.get()));
				}

				@Override
				public CompletionStage<Void> nextRenewal() {
					return renewal.get();
				}
			});
			config.useSingleServer().setAddress(server.uri()).setConnectionMinimumIdleSize(1).setConnectionPoolSize(1);
			RedissonClient client = Redisson.create(config);
			try (RedlockLockBackend backend = new RedlockLockBackend(List.of(client),
					new RedlockSettings(Duration.ofMillis(500), 0.01, Duration.ofMillis(2)))) {
				assertThat(backend.reachableNodes()).isEqualTo(1);
				Set<String> connections = connectionsOf(server, "holdfast");
				for (String next : List.of("second", "third")) {
					// Existing connections stay authenticated; only AUTH with the new password works now.
					server.command("ACL", "SETUSER", "holdfast", "resetpass", ">" + next);
					password.set(next);
					CompletableFuture<Void> renewed = renewal.getAndSet(new CompletableFuture<>());
					renewed.complete(null);
					await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50))
						.until(() -> lastCommandsOf(server, "holdfast").equals(Set.of("auth")));
					for (int i = 0; i < 3; i++) {
						assertThat(backend.reachableNodes()).isEqualTo(1);
					}
					assertThat(connectionsOf(server, "holdfast")).as("no connection replaced").isEqualTo(connections);
				}
			}
			finally {
				client.shutdown(0, 2, TimeUnit.SECONDS);
			}
		}
	}

	@Test
	void requestsMadeWhileTheConnectionOpensAreSentInOrder() throws Exception {
		try (RedisServer server = RedisServer.start(); RedlockIo io = new RedlockIo(5_000)) {
			server.command("ACL", "SETUSER", "holdfast", "on", ">secret", "~*", "&*", "+@all");
			Config config = new Config();
			// AUTH makes opening wait for the server's answer.
			config.useSingleServer().setAddress(server.uri()).setUsername("holdfast").setPassword("secret")
				.setConnectionMinimumIdleSize(1).setConnectionPoolSize(1);
			RedissonClient client = Redisson.create(config);
			NodeConnection connection = null;
			try {
				server.pause();
				connection = NodeConnection.of(client, io);
				String key = "order";
				CompletableFuture<List<Object>> first = connection.eval(RedlockScripts.ACQUIRE, 2, key,
						key + RedlockLockBackend.FENCE_SUFFIX, "first", 10_000L, 60_000L);
				CompletableFuture<Long> release = connection.eval(RedlockScripts.RELEASE,
						RedlockLockBackend.releaseParams(key, "first",
								RedlockScripts.bytes(RedlockSettings.DEFAULT_RELEASE_CHANNEL)));
				CompletableFuture<List<Object>> second = connection.eval(RedlockScripts.ACQUIRE, 2, key,
						key + RedlockLockBackend.FENCE_SUFFIX, "second", 10_000L, 60_000L);
				await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(2)).until(() -> !first.isDone());
				assertThat(first).as("parked while the connection opens").isNotDone();
				server.resume();
				assertThat(RedlockScripts.isGranted(first.get(5, TimeUnit.SECONDS))).as("first acquire").isTrue();
				assertThat(release.get(5, TimeUnit.SECONDS)).as("release after it").isEqualTo(1L);
				assertThat(RedlockScripts.isGranted(second.get(5, TimeUnit.SECONDS))).as("second acquire").isTrue();
			}
			finally {
				server.resume();
				if (connection != null) {
					connection.close();
				}
				client.shutdown(0, 2, TimeUnit.SECONDS);
			}
		}
	}

	@Test
	void aRequestTheNodeHasNoScriptForDoesNotRunAfterLaterRequests() throws Exception {
		try (RedisServer server = RedisServer.start(); RedlockIo io = new RedlockIo(5_000)) {
			Config config = new Config();
			config.useSingleServer().setAddress(server.uri()).setConnectionMinimumIdleSize(1).setConnectionPoolSize(1);
			RedissonClient client = Redisson.create(config);
			NodeConnection connection = null;
			try {
				connection = NodeConnection.of(client, io);
				assertThat(connection.ping().get(5, TimeUnit.SECONDS)).isEqualTo("PONG");
				// The node loses its scripts, and then learns the release script only (from another
				// client): an acquire meets NOSCRIPT while its release, sent after it, runs.
				server.command("SCRIPT", "FLUSH");
				server.command("SCRIPT", "LOAD", RedlockScripts.RELEASE_TEXT);
				String key = "no-script";
				server.pause();
				CompletableFuture<List<Object>> acquire = connection.eval(RedlockScripts.ACQUIRE, 2, key,
						key + RedlockLockBackend.FENCE_SUFFIX, "owner", 60_000L, 60_000L);
				CompletableFuture<Long> release = connection.eval(RedlockScripts.RELEASE,
						RedlockLockBackend.releaseParams(key, "owner",
								RedlockScripts.bytes(RedlockSettings.DEFAULT_RELEASE_CHANNEL)));
				Thread.sleep(100);
				server.resume();
				release.handle((value, error) -> null).get(5, TimeUnit.SECONDS);
				acquire.handle((value, error) -> null).get(5, TimeUnit.SECONDS);
				// Either the acquire ran first and the release deleted it, or it did not run at all.
				assertThat(server.command("GET", key)).as("the lock the release was sent after").isNull();
				// The scripts are known again: the next request runs as EVALSHA.
				await().atMost(Duration.ofSeconds(5)).until(() -> scriptKnown(server));
				assertThat(RedlockScripts.isGranted(connection.eval(RedlockScripts.ACQUIRE, 2, key,
						key + RedlockLockBackend.FENCE_SUFFIX, "owner", 60_000L, 60_000L).get(5, TimeUnit.SECONDS))).isTrue();
			}
			finally {
				server.resume();
				if (connection != null) {
					connection.close();
				}
				client.shutdown(0, 2, TimeUnit.SECONDS);
			}
		}
	}

	@Test
	void onlyTheBackendsHandlerAndTheTransportsAreLeftOnTheConnection() throws Exception {
		try (RedisServer server = RedisServer.start(); RedlockIo io = new RedlockIo(5_000)) {
			Config config = new Config();
			config.useSingleServer().setAddress(server.uri()).setConnectionMinimumIdleSize(1).setConnectionPoolSize(1);
			RedissonClient client = Redisson.create(config);
			NodeConnection connection = null;
			try {
				connection = NodeConnection.of(client, io);
				assertThat(connection.ping().get(5, TimeUnit.SECONDS)).isEqualTo("PONG");
				List<String> names = connection.handlerNames();
				// A handler that a newer Redisson adds in front of NodeChannel would see (or eat) the
				// backend's traffic: it must be taken off too, or allowed here knowingly.
				assertThat(names).contains("holdfast-redlock");
				assertThat(names.stream().filter((name) -> !name.startsWith("DefaultChannelPipeline$TailContext")))
					.allMatch(ALLOWED_HANDLERS::contains, "allowed: " + ALLOWED_HANDLERS);
			}
			finally {
				if (connection != null) {
					connection.close();
				}
				client.shutdown(0, 2, TimeUnit.SECONDS);
			}
		}
	}

	@Test
	void openingAfterTheClientShutDownFailsWithinItsTimeouts() throws Exception {
		try (RedisServer server = RedisServer.start(); RedlockIo io = new RedlockIo(5_000)) {
			Config config = new Config();
			// A client name: opening needs a command, which runs on the client's timer.
			config.useSingleServer().setAddress(server.uri()).setClientName("holdfast-shutdown")
				.setConnectTimeout(300).setTimeout(300).setConnectionMinimumIdleSize(1).setConnectionPoolSize(1);
			RedissonClient client = Redisson.create(config);
			NodeConnection connection = NodeConnection.of(client, io);
			try {
				assertThat(connection.ping().get(5, TimeUnit.SECONDS)).isEqualTo("PONG");
				client.shutdown(0, 2, TimeUnit.SECONDS);
				server.command("CLIENT", "KILL", "TYPE", "normal");
				Thread.sleep(200);
				// The next request opens a new connection, whose opening may never complete: bounded.
				CompletableFuture<Object> ping = connection.ping();
				assertThat(ping.handle((value, error) -> "done").get(3, TimeUnit.SECONDS)).isEqualTo("done");
			}
			finally {
				connection.close();
			}
		}
	}

	// NodeChannel, and what Redisson's channel initializer adds for the transport: the errors logger,
	// and with TLS (not configured here) the SSL handler and its initializer.
	private static final Set<String> ALLOWED_HANDLERS = Set.of("holdfast-redlock", "ErrorsLoggingHandler#0",
			"SslHandler#0", "RedisChannelInitializer$1#0");

	private static boolean scriptKnown(RedisServer server) {
		Object reply = server.command("SCRIPT", "EXISTS", new String(RedlockScripts.ACQUIRE.sha()));
		return reply instanceof List<?> list && !list.isEmpty() && Long.valueOf(1).equals(list.get(0));
	}

	private static List<String> clients(RedisServer server, String user) {
		String list = server.commandString("CLIENT", "LIST");
		return Arrays.stream((list != null) ? list.split("\n") : new String[0])
			.filter((line) -> line.contains(" user=" + user + " "))
			.toList();
	}

	private static Set<String> connectionsOf(RedisServer server, String user) {
		return clients(server, user).stream().map((line) -> field(line, "id")).collect(Collectors.toSet());
	}

	private static Set<String> lastCommandsOf(RedisServer server, String user) {
		return clients(server, user).stream().map((line) -> field(line, "cmd")).collect(Collectors.toSet());
	}

	private static String field(String line, String name) {
		for (String part : line.trim().split(" ")) {
			if (part.startsWith(name + "=")) {
				return part.substring(name.length() + 1);
			}
		}
		return "";
	}

	/**
	 * A TCP proxy whose existing connections can be black-holed (kept open, nothing forwarded) while
	 * new ones are forwarded: a middlebox that forgot the flow, or a hung proxy.
	 */
	static final class BlackHoleProxy implements AutoCloseable {

		final ServerSocket server;

		final AtomicInteger generation = new AtomicInteger();

		final AtomicInteger accepted = new AtomicInteger();

		BlackHoleProxy(int target) throws Exception {
			this.server = new ServerSocket(0);
			Thread acceptor = new Thread(() -> {
				while (!this.server.isClosed()) {
					try {
						Socket client = this.server.accept();
						this.accepted.incrementAndGet();
						Socket upstream = new Socket();
						upstream.connect(new InetSocketAddress("127.0.0.1", target));
						int current = this.generation.get();
						pipe(client, upstream, current);
						pipe(upstream, client, current);
					}
					catch (Exception ex) {
						return;
					}
				}
			}, "black-hole-proxy");
			acceptor.setDaemon(true);
			acceptor.start();
		}

		void blackHoleExisting() {
			this.generation.incrementAndGet();
		}

		private void pipe(Socket from, Socket to, int current) {
			Thread thread = new Thread(() -> {
				try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
					byte[] buffer = new byte[8192];
					while (true) {
						int n = in.read(buffer);
						if (n < 0) {
							return;
						}
						while (this.generation.get() != current) {
							if (this.server.isClosed()) {
								return;
							}
							TimeUnit.MILLISECONDS.sleep(50);
						}
						out.write(buffer, 0, n);
					}
				}
				catch (Exception ex) {
					// The connection or the proxy closed.
				}
			}, "black-hole-proxy-pipe");
			thread.setDaemon(true);
			thread.start();
		}

		int port() {
			return this.server.getLocalPort();
		}

		@Override
		public void close() throws Exception {
			this.server.close();
		}

	}

}
