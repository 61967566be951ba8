package dev.holdfast.faults;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * A ZooKeeper ensemble of separate server processes ({@code QuorumPeerMain} from the
 * {@code zookeeper} artifact, on this JVM's class path) on free loopback ports, with data and logs
 * under the run's directory, that the suite pauses, kills, restarts, partitions and runs on a fake
 * clock. Every process is registered with {@link Processes}.
 * <p>
 * Tick time 500 ms, so that sessions may be as short as 1 s; transaction logs are synced
 * ({@code forceSync}, ZooKeeper's default), so that a killed server keeps what it acknowledged.
 */
final class ZooKeeperEnsemble implements AutoCloseable {

	private final List<Server> servers = new ArrayList<>();

	private final Map<String, String> environment;

	private ZooKeeperEnsemble(Map<String, String> environment) {
		this.environment = environment;
	}

	/** Starts {@code size} servers and waits until they serve clients. */
	static ZooKeeperEnsemble start(Path dir, int size, Map<String, String> environment) throws IOException {
		ZooKeeperEnsemble ensemble = new ZooKeeperEnsemble(environment);
		List<int[]> ports = new ArrayList<>();
		for (int i = 0; i < size; i++) {
			ports.add(new int[] { RedisNode.freePort(), RedisNode.freePort(), RedisNode.freePort() });
		}
		StringBuilder members = new StringBuilder();
		for (int i = 0; i < size; i++) {
			members.append("server.").append(i + 1).append("=127.0.0.1:").append(ports.get(i)[1]).append(':')
				.append(ports.get(i)[2]).append('\n');
		}
		try {
			for (int i = 0; i < size; i++) {
				Path serverDir = dir.resolve("zk" + i);
				Files.createDirectories(serverDir.resolve("data"));
				Files.writeString(serverDir.resolve("data").resolve("myid"), Integer.toString(i + 1));
				Path config = serverDir.resolve("zoo.cfg");
				Files.writeString(config, "tickTime=500\ninitLimit=10\nsyncLimit=4\n" + "dataDir="
						+ serverDir.resolve("data") + "\nclientPort=" + ports.get(i)[0]
						+ "\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n4lw.commands.whitelist=*\n"
						+ "minSessionTimeout=1000\nmaxSessionTimeout=10000\n" + members);
				Server server = new Server(i, ports.get(i), config, serverDir.resolve("server.out"));
				ensemble.servers.add(server);
				ensemble.launch(server);
			}
			for (Server server : ensemble.servers) {
				ensemble.awaitServing(server);
			}
			return ensemble;
		}
		catch (IOException | RuntimeException ex) {
			ensemble.close();
			throw ex;
		}
	}

	/** The connect string of every server. */
	String connectString() {
		return this.servers.stream().map((s) -> "127.0.0.1:" + s.ports[0]).collect(Collectors.joining(","));
	}

	int size() {
		return this.servers.size();
	}

	/** The client, quorum and election ports of server {@code index}. */
	int[] ports(int index) {
		return this.servers.get(index).ports.clone();
	}

	/** The index of the leading server, waiting up to 20 s for an election. */
	int leader() {
		long deadline = System.nanoTime() + 20_000_000_000L;
		while (System.nanoTime() < deadline) {
			for (Server server : this.servers) {
				if (server.process != null && server.process.isAlive()
						&& command(server, "srvr").contains("Mode: leader")) {
					return server.index;
				}
			}
			RedisNode.sleep(50);
		}
		throw new IllegalStateException("No ZooKeeper server leads after 20 s");
	}

	/** SIGSTOP. */
	void pause(int index) {
		Signals.send(this.servers.get(index).process.pid(), "STOP");
	}

	/** SIGCONT. */
	void resume(int index) {
		Signals.send(this.servers.get(index).process.pid(), "CONT");
	}

	/** SIGKILL, as a crash. */
	void kill(int index) {
		Process process = this.servers.get(index).process;
		if (process != null && process.isAlive()) {
			Signals.send(process.pid(), "CONT");
			process.destroyForcibly();
			try {
				process.waitFor();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	/** Starts server {@code index} again on its ports and data, and waits until it serves. */
	void restart(int index) throws IOException {
		Server server = this.servers.get(index);
		launch(server);
		awaitServing(server);
	}

	/**
	 * Kills every server (SIGKILL), and after {@code downMs} starts them all on their data and waits
	 * until they serve (one alone cannot: it needs a quorum).
	 */
	void restartAll(long downMs) throws IOException {
		for (Server server : this.servers) {
			kill(server.index);
		}
		RedisNode.sleep(downMs);
		for (Server server : this.servers) {
			launch(server);
		}
		for (Server server : this.servers) {
			awaitServing(server);
		}
	}

	private void launch(Server server) throws IOException {
		List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
				"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
				"org.apache.zookeeper.server.quorum.QuorumPeerMain", server.config.toString());
		ProcessBuilder builder = new ProcessBuilder(command);
		builder.environment().putAll(this.environment);
		server.process = builder.redirectErrorStream(true)
			.redirectOutput(ProcessBuilder.Redirect.appendTo(server.output.toFile()))
			.start();
		Processes.register(server.process);
		if (this.environment.containsKey("LD_PRELOAD")) {
			FakeClock.watch(server.process);
		}
	}

	private void awaitServing(Server server) {
		long deadline = System.nanoTime() + 60_000_000_000L;
		while (System.nanoTime() < deadline) {
			String mode = command(server, "srvr");
			if (mode.contains("Mode: leader") || mode.contains("Mode: follower")) {
				return;
			}
			if (!server.process.isAlive()) {
				throw new IllegalStateException("ZooKeeper server " + server.index + " exited, see " + server.output);
			}
			RedisNode.sleep(100);
		}
		throw new IllegalStateException("ZooKeeper server " + server.index + " did not serve within 60 s, see "
				+ server.output);
	}

	private static String command(Server server, String word) {
		try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), server.ports[0])) {
			socket.setSoTimeout(1000);
			OutputStream out = socket.getOutputStream();
			out.write(word.getBytes(StandardCharsets.US_ASCII));
			out.flush();
			InputStream in = socket.getInputStream();
			return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
		}
		catch (IOException ex) {
			return "";
		}
	}

	@Override
	public void close() {
		for (Server server : this.servers) {
			kill(server.index);
		}
	}

	private static final class Server {

		final int index;

		final int[] ports;

		final Path config;

		final Path output;

		Process process;

		Server(int index, int[] ports, Path config, Path output) {
			this.index = index;
			this.ports = ports;
			this.config = config;
			this.output = output;
		}

	}

}
