package dev.holdfast.redlock;

import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The script connections of the Redlock backend against real redis-servers: a connection that
 * stops answering without closing is replaced.
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
