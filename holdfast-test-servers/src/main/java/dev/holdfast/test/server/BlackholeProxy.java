package dev.holdfast.test.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A TCP proxy on a free loopback port in front of one server, for tests: while
 * {@link #dropAnswers(boolean) dropping answers}, bytes from the client still reach the server
 * but the server's answers are thrown away, until the connections are
 * {@linkplain #cutConnections() cut}: a request whose outcome the client never learns.
 * {@link #dropAnswersFrom(String)} starts dropping at the request that carries a given text, so
 * that exactly that request and the ones after it go unanswered. While {@link #holdAnswers()
 * holding answers}, the server's answers are kept and sent on later ({@link #letThroughAnswers}),
 * those of subscription connections apart from the others: a message delivered late.
 */
public final class BlackholeProxy implements AutoCloseable {

	/** What marks a subscription connection, in its client's bytes. */
	private static final byte[] SUBSCRIBE = "SUBSCRIBE".getBytes(StandardCharsets.US_ASCII);

	private final ServerSocket listener;

	private final int target;

	private final List<Socket> sockets = new CopyOnWriteArrayList<>();

	private final List<Link> links = new CopyOnWriteArrayList<>();

	/** Whether a connection opened now starts holding answers. */
	private volatile boolean holding;

	private volatile boolean dropping;

	/** Starts {@link #dropping} when a client's bytes contain it; null for none. */
	private volatile byte[] trigger;

	/** A proxy to the server on loopback port {@code targetPort}. */
	public BlackholeProxy(int targetPort) throws IOException {
		this.target = targetPort;
		this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
		Thread acceptor = new Thread(this::accept, "blackhole-proxy-accept");
		acceptor.setDaemon(true);
		acceptor.start();
	}

	/** {@code 127.0.0.1:<port>} of the proxy. */
	public String connectString() {
		return "127.0.0.1:" + port();
	}

	/** The proxy's loopback port, for clients to connect to instead of the server's. */
	public int port() {
		return this.listener.getLocalPort();
	}

	/** Starts or stops throwing the server's answers away. */
	public void dropAnswers(boolean drop) {
		this.trigger = null;
		this.dropping = drop;
	}

	/**
	 * Starts throwing the server's answers away once a client sends bytes that contain
	 * {@code text} (in ASCII, within one read of the client's socket, as a short request is):
	 * that request reaches the server, its answer and every later one do not.
	 * {@link #dropping()} tells whether it happened.
	 */
	public void dropAnswersFrom(String text) {
		this.trigger = text.getBytes(StandardCharsets.US_ASCII);
	}

	/** Whether the server's answers are being thrown away. */
	public boolean dropping() {
		return this.dropping;
	}

	/** Keeps the server's answers on every connection (and on new ones) until let through. */
	public void holdAnswers() {
		this.holding = true;
		this.links.forEach((link) -> link.hold(true));
	}

	/**
	 * Sends on the answers kept for the subscription connections (whose client sent
	 * {@code SUBSCRIBE}), or for the others, and stops keeping theirs; new connections stop
	 * holding with the others.
	 */
	public void letThroughAnswers(boolean subscriptions) {
		if (!subscriptions) {
			this.holding = false;
		}
		for (Link link : this.links) {
			if (link.subscription == subscriptions) {
				link.hold(false);
			}
		}
	}

	/** How many open connections are subscriptions (their client sent {@code SUBSCRIBE}). */
	public long subscriptions() {
		return this.links.stream().filter((link) -> link.subscription).count();
	}

	/** Breaks every open connection, as a network failure does; new connections go through. */
	public void cutConnections() {
		this.sockets.forEach(BlackholeProxy::closeQuietly);
		this.sockets.clear();
	}

	private void accept() {
		while (!this.listener.isClosed()) {
			try {
				Socket client = this.listener.accept();
				Socket server = new Socket(InetAddress.getLoopbackAddress(), this.target);
				this.sockets.add(client);
				this.sockets.add(server);
				Link link = new Link(client.getOutputStream());
				link.hold(this.holding);
				this.links.add(link);
				pump(client, server, link, false);
				pump(server, client, link, true);
			}
			catch (IOException ex) {
				// closed
			}
		}
	}

	private void pump(Socket from, Socket to, Link link, boolean answers) {
		Thread thread = new Thread(() -> {
			byte[] buffer = new byte[8192];
			try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
				int read;
				while ((read = in.read(buffer)) >= 0) {
					if (answers && this.dropping) {
						continue;
					}
					byte[] trigger = this.trigger;
					if (!answers && trigger != null && contains(buffer, read, trigger)) {
						this.trigger = null;
						this.dropping = true;
					}
					if (!answers && contains(buffer, read, SUBSCRIBE)) {
						link.subscription = true;
					}
					if (answers) {
						link.answer(buffer, read);
					}
					else {
						out.write(buffer, 0, read);
						out.flush();
					}
				}
			}
			catch (IOException ex) {
				// one side closed
			}
			finally {
				this.links.remove(link);
				closeQuietly(from);
				closeQuietly(to);
			}
		}, "blackhole-proxy-pump");
		thread.setDaemon(true);
		thread.start();
	}

	private static boolean contains(byte[] buffer, int length, byte[] text) {
		for (int start = 0; start + text.length <= length; start++) {
			int i = 0;
			while (i < text.length && buffer[start + i] == text[i]) {
				i++;
			}
			if (i == text.length) {
				return true;
			}
		}
		return false;
	}

	private static void closeQuietly(Socket socket) {
		try {
			socket.close();
		}
		catch (IOException ex) {
			// already closed
		}
	}

	/** One client connection: its answers, kept while holding. */
	private static final class Link {

		private final OutputStream toClient;

		private final ReentrantLock lock = new ReentrantLock();

		private final ByteArrayOutputStream held = new ByteArrayOutputStream();

		private boolean holding;

		volatile boolean subscription;

		Link(OutputStream toClient) {
			this.toClient = toClient;
		}

		void answer(byte[] buffer, int length) throws IOException {
			this.lock.lock();
			try {
				if (this.holding) {
					this.held.write(buffer, 0, length);
				}
				else {
					this.toClient.write(buffer, 0, length);
					this.toClient.flush();
				}
			}
			finally {
				this.lock.unlock();
			}
		}

		/** Starts keeping answers, or sends on the kept ones and stops. */
		void hold(boolean hold) {
			this.lock.lock();
			try {
				this.holding = hold;
				if (!hold && this.held.size() > 0) {
					this.toClient.write(this.held.toByteArray());
					this.toClient.flush();
					this.held.reset();
				}
			}
			catch (IOException ex) {
				// The connection closed.
			}
			finally {
				this.lock.unlock();
			}
		}

	}

	@Override
	public void close() throws IOException {
		this.listener.close();
		this.sockets.forEach(BlackholeProxy::closeQuietly);
	}

}
