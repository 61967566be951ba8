package dev.holdfast.test.server;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.util.ServiceUtils;

/**
 * A real ZooKeeper server, or an ensemble of several, running in this JVM on free loopback
 * ports: Apache Curator's {@code TestingServer} and {@code TestingCluster} (the
 * {@code org.apache.curator:curator-test} dependency, which brings the server and the
 * {@code metrics-core} and {@code snappy-java} libraries it needs). Every server answers all
 * four-letter admin commands ({@code srvr}, {@code wchp}, ...), for tests that inspect it.
 * <p>
 * Servers are numbered from 0 in the order of {@link #ports()}; a test can stop one and start it
 * again with its data, to take a leader or a quorum away.
 */
public final class ZooKeeperServer implements AutoCloseable {

	private final TestingServer single;

	private final TestingCluster ensemble;

	private final List<InstanceSpec> specs;

	private ZooKeeperServer(TestingServer single, TestingCluster ensemble, List<InstanceSpec> specs) {
		this.single = single;
		this.ensemble = ensemble;
		this.specs = specs;
	}

	/** Starts one standalone server. */
	public static ZooKeeperServer start() {
		enableFourLetterWords();
		try {
			TestingServer server = new TestingServer(true);
			return new ZooKeeperServer(server, null, List.of());
		}
		catch (Exception ex) {
			throw new IllegalStateException("Could not start a ZooKeeper server", ex);
		}
	}

	/** Starts an ensemble of {@code servers} servers (3 or 5 for a quorum that survives failures). */
	public static ZooKeeperServer startEnsemble(int servers) {
		enableFourLetterWords();
		TestingCluster cluster = new TestingCluster(servers);
		try {
			cluster.start();
		}
		catch (Exception ex) {
			closeQuietly(cluster);
			throw new IllegalStateException("Could not start a ZooKeeper ensemble of " + servers, ex);
		}
		return new ZooKeeperServer(null, cluster, new ArrayList<>(cluster.getInstances()));
	}

	private static void enableFourLetterWords() {
		System.setProperty("zookeeper.4lw.commands.whitelist", "*");
		// A restarted ensemble member can find its election port still bound for a moment; after
		// its default 3 failed binds ZooKeeper calls System.exit(14), which killed a whole test
		// fork in CI. Retry longer, and never exit the test JVM: a server that cannot start
		// fails its test instead.
		System.setProperty("zookeeper.electionPortBindRetry", "20");
		ServiceUtils.setSystemExitProcedure(ServiceUtils.LOG_ONLY);
	}

	/** The connect string of every server, as a client takes it: {@code 127.0.0.1:port,...}. */
	public String connectString() {
		return (this.single != null) ? this.single.getConnectString() : this.ensemble.getConnectString();
	}

	/** The client port of each server. */
	public List<Integer> ports() {
		return (this.single != null) ? List.of(this.single.getPort())
				: this.specs.stream().map(InstanceSpec::getPort).toList();
	}

	/** Stops server {@code index}, keeping its data; its clients lose their connection. */
	public void stop(int index) {
		try {
			if (this.single != null) {
				this.single.stop();
			}
			else {
				this.ensemble.killServer(this.specs.get(index));
			}
		}
		catch (Exception ex) {
			throw new IllegalStateException("Could not stop ZooKeeper server " + index, ex);
		}
	}

	/** Starts server {@code index} again on its port, with its data. */
	public void restart(int index) {
		try {
			if (this.single != null) {
				this.single.restart();
			}
			else {
				this.ensemble.restartServer(this.specs.get(index));
			}
		}
		catch (Exception ex) {
			throw new IllegalStateException("Could not restart ZooKeeper server " + index, ex);
		}
	}

	/**
	 * The index of the server that leads the ensemble, once one does (waiting up to 15 s for an
	 * election); 0 for a standalone server.
	 */
	public int leader() {
		long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
		do {
			List<Integer> ports = ports();
			for (int i = 0; i < ports.size(); i++) {
				String mode = modeOf(ports.get(i));
				if (mode.contains("Mode: leader") || mode.contains("Mode: standalone")) {
					return i;
				}
			}
			sleep(100);
		}
		while (System.nanoTime() - deadline < 0);
		throw new IllegalStateException("No ZooKeeper server leads the ensemble after 15 s");
	}

	/** Sends a four-letter admin command to server {@code index} and returns its answer. */
	public String command(int index, String command) {
		try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), ports().get(index))) {
			socket.setSoTimeout(5000);
			OutputStream out = socket.getOutputStream();
			out.write(command.getBytes(StandardCharsets.US_ASCII));
			out.flush();
			InputStream in = socket.getInputStream();
			return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
		}
		catch (IOException ex) {
			throw new UncheckedIOException("ZooKeeper server " + index + " did not answer '" + command + "'", ex);
		}
	}

	private String modeOf(int port) {
		try {
			return command(ports().indexOf(port), "srvr");
		}
		catch (UncheckedIOException ex) {
			return "";
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

	/** Stops every server and deletes their data. */
	@Override
	public void close() {
		closeQuietly((this.single != null) ? this.single : this.ensemble);
	}

	private static void closeQuietly(java.io.Closeable closeable) {
		try {
			closeable.close();
		}
		catch (IOException ex) {
			// best effort: the servers' temporary directories go with the JVM
		}
	}

}
