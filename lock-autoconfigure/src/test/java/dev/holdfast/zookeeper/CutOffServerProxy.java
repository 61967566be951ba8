package dev.holdfast.zookeeper;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A TCP proxy in front of one ZooKeeper server, for tests. Once {@linkplain #cutOff() cut off}
 * it passes the server's answers to pings and nothing else: the client's requests get no answer
 * and no watch event arrives, while its connection looks alive, as with a server that is cut off
 * from its quorum but still serves its clients' heartbeats.
 */
final class CutOffServerProxy implements AutoCloseable {

	/** The xid of ZooKeeper's answers to pings. */
	private static final int PING_XID = -2;

	private final ServerSocket listener;

	private final int target;

	private final List<Socket> clients = new CopyOnWriteArrayList<>();

	private final List<Socket> sockets = new CopyOnWriteArrayList<>();

	private volatile boolean cutOff;

	CutOffServerProxy(int targetPort) throws IOException {
		this.target = targetPort;
		this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
		Thread acceptor = new Thread(this::accept, "cut-off-proxy-accept");
		acceptor.setDaemon(true);
		acceptor.start();
	}

	String address() {
		return "127.0.0.1:" + this.listener.getLocalPort();
	}

	/** Whether a client is connected through this proxy now. */
	boolean connected() {
		return this.clients.stream().anyMatch((socket) -> !socket.isClosed());
	}

	/** From now on only answers to pings reach the clients. */
	void cutOff() {
		this.cutOff = true;
	}

	private void accept() {
		while (!this.listener.isClosed()) {
			try {
				Socket client = this.listener.accept();
				Socket server = new Socket(InetAddress.getLoopbackAddress(), this.target);
				this.clients.add(client);
				this.sockets.add(client);
				this.sockets.add(server);
				start(() -> copy(client.getInputStream(), server.getOutputStream()), client, server);
				start(() -> answers(new DataInputStream(server.getInputStream()),
						new DataOutputStream(client.getOutputStream())), client, server);
			}
			catch (IOException ex) {
				// closed
			}
		}
	}

	private static void copy(InputStream in, OutputStream out) throws IOException {
		byte[] buffer = new byte[8192];
		int read;
		while ((read = in.read(buffer)) >= 0) {
			out.write(buffer, 0, read);
			out.flush();
		}
	}

	/** Frame by frame: the connect response first, then answers and events (xid first). */
	private void answers(DataInputStream in, DataOutputStream out) throws IOException {
		boolean first = true;
		while (true) {
			int length = in.readInt();
			byte[] frame = new byte[length];
			in.readFully(frame);
			int xid = (length >= 4) ? ((frame[0] & 0xFF) << 24 | (frame[1] & 0xFF) << 16 | (frame[2] & 0xFF) << 8
					| (frame[3] & 0xFF)) : 0;
			if (first || !this.cutOff || xid == PING_XID) {
				out.writeInt(length);
				out.write(frame);
				out.flush();
			}
			first = false;
		}
	}

	private static void start(Pump pump, Socket client, Socket server) {
		Thread thread = new Thread(() -> {
			try {
				pump.run();
			}
			catch (IOException ex) {
				// one side closed
			}
			finally {
				closeQuietly(client);
				closeQuietly(server);
			}
		}, "cut-off-proxy-pump");
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
		this.sockets.forEach(CutOffServerProxy::closeQuietly);
	}

	@FunctionalInterface
	private interface Pump {

		void run() throws IOException;

	}

}
