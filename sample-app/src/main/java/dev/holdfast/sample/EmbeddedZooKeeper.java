package dev.holdfast.sample;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.zookeeper.server.embedded.ExitHandler;
import org.apache.zookeeper.server.embedded.ZooKeeperServerEmbedded;

/**
 * A standalone ZooKeeper server inside this JVM (ZooKeeper's own {@code ZooKeeperServerEmbedded}),
 * for the {@code zookeeper} profile and the demo: no ZooKeeper to install. Like the H2 default,
 * the first instance on a machine serves it and the others connect to it. A real deployment runs
 * an ensemble of three or five servers on separate machines instead.
 */
public final class EmbeddedZooKeeper implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(EmbeddedZooKeeper.class);

	private final ZooKeeperServerEmbedded server;

	private final int port;

	private EmbeddedZooKeeper(ZooKeeperServerEmbedded server, int port) {
		this.server = server;
		this.port = port;
	}

	/**
	 * Starts a server on {@code 127.0.0.1:port} with its data under {@code dir}, unless something
	 * already listens there (another instance's server).
	 * @return the started server, or {@code null} when another one already listens
	 */
	public static EmbeddedZooKeeper startUnlessRunning(int port, Path dir) {
		if (listening(port)) {
			logger.info("A ZooKeeper server already listens on 127.0.0.1:" + port + "; using it");
			return null;
		}
		try {
			Files.createDirectories(dir);
			Properties configuration = new Properties();
			configuration.setProperty("clientPort", Integer.toString(port));
			configuration.setProperty("clientPortAddress", "127.0.0.1");
			configuration.setProperty("tickTime", "2000");
			// the admin server needs Jetty, which the zookeeper artifact leaves out
			configuration.setProperty("admin.enableServer", "false");
			ZooKeeperServerEmbedded server = ZooKeeperServerEmbedded.builder()
				.baseDir(dir)
				.configuration(configuration)
				.exitHandler(ExitHandler.LOG_ONLY)
				.build();
			server.start(30_000);
			logger.info("Started an embedded ZooKeeper server on 127.0.0.1:" + port + " (data in " + dir + ")");
			return new EmbeddedZooKeeper(server, port);
		}
		catch (Exception ex) {
			throw new IllegalStateException("Could not start an embedded ZooKeeper server on port " + port, ex);
		}
	}

	/** Whether a server accepts connections on {@code 127.0.0.1:port}. */
	static boolean listening(int port) {
		try (Socket socket = new Socket()) {
			socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 500);
			return true;
		}
		catch (IOException ex) {
			return false;
		}
	}

	public String connectString() {
		return "127.0.0.1:" + this.port;
	}

	@Override
	public void close() {
		this.server.close();
	}

}
