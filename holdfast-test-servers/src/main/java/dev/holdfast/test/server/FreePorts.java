package dev.holdfast.test.server;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** Free loopback ports for the launchers' servers. */
final class FreePorts {

	private FreePorts() {
	}

	/**
	 * A loopback port that nothing listens on now. Another process may take it before the
	 * server binds it; the launchers start at once after asking.
	 */
	static int next() throws IOException {
		try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
			socket.setReuseAddress(true);
			return socket.getLocalPort();
		}
	}

}
