package dev.holdfast.zookeeper;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy on a free loopback port in front of one server, for tests: while
 * {@link #dropAnswers(boolean) dropping answers}, bytes from the client still reach the server
 * but the server's answers are thrown away, until the connections are
 * {@linkplain #cutConnections() cut}: a request whose outcome the client never learns.
 */
final class BlackholeProxy implements AutoCloseable {

	private final ServerSocket listener;

	private final int target;

	private final List<Socket> sockets = new CopyOnWriteArrayList<>();

	private volatile boolean dropping;

	BlackholeProxy(int targetPort) throws IOException {
		this.target = targetPort;
		this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
		Thread acceptor = new Thread(this::accept, "blackhole-proxy-accept");
		acceptor.setDaemon(true);
		acceptor.start();
	}

	String connectString() {
		return "127.0.0.1:" + this.listener.getLocalPort();
	}

	void dropAnswers(boolean drop) {
		this.dropping = drop;
	}

	/** Breaks every open connection, as a network failure does; new connections go through. */
	void cutConnections() {
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
				pump(client, server, false);
				pump(server, client, true);
			}
			catch (IOException ex) {
				// closed
			}
		}
	}

	private void pump(Socket from, Socket to, boolean answers) {
		Thread thread = new Thread(() -> {
			byte[] buffer = new byte[8192];
			try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
				int read;
				while ((read = in.read(buffer)) >= 0) {
					if (answers && this.dropping) {
						continue;
					}
					out.write(buffer, 0, read);
					out.flush();
				}
			}
			catch (IOException ex) {
				// one side closed
			}
			finally {
				closeQuietly(from);
				closeQuietly(to);
			}
		}, "blackhole-proxy-pump");
		thread.setDaemon(true);
		thread.start();
	}

	private static void closeQuietly(Socket socket) {
		try {
			socket.close();
		}
		catch (IOException ex) {
			// already closed
		}
	}

	@Override
	public void close() throws IOException {
		this.listener.close();
		this.sockets.forEach(BlackholeProxy::closeQuietly);
	}

}
