package dev.holdfast.faults;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * One run: starts a resource Redis and the backend's Redis nodes (for {@link #jdbc(boolean) jdbc},
 * one PostgreSQL server that holds both the locks and the resource), starts the clients as separate
 * JVMs, lets them settle, injects a fault (bounded in time, healed by the fault itself), lets them
 * run on, stops them, records the counters' final values and returns the {@link Checker}'s report.
 * Every process is started here, stopped here through its handle, and also covered by the
 * shutdown hook of {@link Processes}.
 */
public final class FaultRun {

	/** What the controller does to the system while the clients run. */
	@FunctionalInterface
	public interface Fault {

		void inject(FaultContext context) throws Exception;

	}

	private final String name;

	private String backend = "redis";

	private int nodeCount = 1;

	private boolean persistent;

	private int clients = 3;

	private long ttlMs = 1000;

	private long workMs = 20;

	private long settleMs = 1500;

	private long afterMs = 2500;

	private Fault fault = (context) -> {
	};

	private Map<String, String> clientEnvironment = Map.of();

	private boolean clientsInOwnGroups;

	private Map<String, String> nodeEnvironment = Map.of();

	private String clientMain = FaultClient.class.getName();

	private final Map<String, String> clientArguments = new LinkedHashMap<>();

	private final Map<Integer, Map<String, String>> clientEnvironments = new HashMap<>();

	private FaultRun(String name) {
		this.name = name;
	}

	public static FaultRun named(String name) {
		return new FaultRun(name);
	}

	public FaultRun redis(boolean persistent) {
		this.backend = "redis";
		this.nodeCount = 1;
		this.persistent = persistent;
		return this;
	}

	public FaultRun redlock(int nodes, boolean persistent) {
		this.backend = "redlock";
		this.nodeCount = nodes;
		this.persistent = persistent;
		return this;
	}

	/**
	 * The JDBC backend on one PostgreSQL server, which also holds the resource's counters.
	 * @param synchronousCommit whether commits wait for their WAL record ({@code synchronous_commit}),
	 * what makes them survive a kill of the server
	 */
	public FaultRun jdbc(boolean synchronousCommit) {
		this.backend = "jdbc";
		this.nodeCount = 0;
		this.persistent = synchronousCommit;
		return this;
	}

	/** The ZooKeeper backend on an ensemble of {@code servers} separate server processes. */
	public FaultRun zookeeper(int servers) {
		this.backend = "zookeeper";
		this.nodeCount = servers;
		this.persistent = true;
		return this;
	}

	public FaultRun clients(int clients) {
		this.clients = clients;
		return this;
	}

	public FaultRun ttlMs(long ttlMs) {
		this.ttlMs = ttlMs;
		return this;
	}

	/** How long a holder sleeps between reading and writing the counters. */
	public FaultRun workMs(long workMs) {
		this.workMs = workMs;
		return this;
	}

	/** How long the clients run after the fault healed, before they are stopped. */
	public FaultRun afterMs(long afterMs) {
		this.afterMs = afterMs;
		return this;
	}

	/**
	 * Starts the clients as Spring Boot applications ({@link BootFaultClient}): besides the mutex
	 * loop, each runs the tick job {@code ticks}: {@code holdfast} (a
	 * {@code @SingleInstanceScheduled} job), {@code unsafe} (a plain {@code @Scheduled} one) or
	 * {@code off}.
	 */
	public FaultRun bootClients(String ticks) {
		this.clientMain = BootFaultClient.class.getName();
		this.clientArguments.put("ticks", ticks);
		return this;
	}

	/**
	 * Starts the clients as {@link MinimalFaultClient}s, the minimal owner-checked client without
	 * Holdfast that a run is compared with ({@code redis} and {@code jdbc} only).
	 */
	public FaultRun minimalClients() {
		this.clientMain = MinimalFaultClient.class.getName();
		return this;
	}

	/** The tick job's {@code lockAtMostFor}, for {@link #bootClients(String) Boot clients}. */
	public FaultRun lockAtMostForMs(long lockAtMostForMs) {
		this.clientArguments.put("lockAtMostForMs", Long.toString(lockAtMostForMs));
		return this;
	}

	/**
	 * Variables added to the environment of client {@code client} only, e.g.
	 * {@link FakeClock#environment()} to move one instance's wall clock.
	 */
	public FaultRun clientEnvironment(int client, Map<String, String> environment) {
		this.clientEnvironments.put(client, Map.copyOf(environment));
		return this;
	}

	public FaultRun fault(Fault fault) {
		this.fault = fault;
		return this;
	}

	/**
	 * Variables added to every client JVM's environment, e.g. {@link FakeClock#environment()} to
	 * run the clients on a clock that the fault moves.
	 */
	public FaultRun clientEnvironment(Map<String, String> environment) {
		this.clientEnvironment = Map.copyOf(environment);
		return this;
	}

	/**
	 * Runs client {@code i} with the group id {@link FaultContext#clientGroup(int)} (through
	 * {@code setpriv}, as root), so that {@link Partition#client} can cut one client off alone.
	 */
	public FaultRun clientsInOwnGroups() {
		this.clientsInOwnGroups = true;
		return this;
	}

	/**
	 * Variables added to the environment of every backend node's {@code redis-server} (not the
	 * resource's), e.g. {@link FakeClock#environment()} to move the clock that expires locks.
	 */
	public FaultRun nodeEnvironment(Map<String, String> environment) {
		this.nodeEnvironment = Map.copyOf(environment);
		return this;
	}

	public long ttlMs() {
		return this.ttlMs;
	}

	/** Runs the scenario with logs under {@code baseDir/<name>} and checks them. */
	public Checker.Report run(Path baseDir) throws Exception {
		Path dir = baseDir.resolve(this.name);
		deleteRecursively(dir);
		Files.createDirectories(dir);
		List<RedisNode> nodes = new ArrayList<>();
		List<Process> clientProcesses = new ArrayList<>();
		PostgresNode postgres = null;
		ZooKeeperEnsemble zooKeeper = null;
		try (PrintWriter controllerLog = new PrintWriter(
				Files.newBufferedWriter(dir.resolve("controller.log"), StandardCharsets.UTF_8))) {
			String resourceUri;
			if (this.backend.equals("jdbc")) {
				postgres = PostgresNode.start(dir.resolve("postgres"), this.persistent);
				resourceUri = postgres.jdbcUrl();
			}
			else {
				RedisNode resourceNode = RedisNode.start(dir.resolve("resource"), false);
				nodes.add(resourceNode);
				resourceUri = resourceNode.uri();
			}
			List<RedisNode> backendNodes = new ArrayList<>();
			if (this.backend.equals("zookeeper")) {
				zooKeeper = ZooKeeperEnsemble.start(dir.resolve("zookeeper"), this.nodeCount, this.nodeEnvironment);
			}
			for (int i = 0; (zooKeeper == null) && i < this.nodeCount; i++) {
				backendNodes.add(RedisNode.start(dir.resolve("node" + i), this.persistent, this.nodeEnvironment));
			}
			nodes.addAll(backendNodes);
			String nodeUris = (postgres != null) ? postgres.jdbcUrl()
					: (zooKeeper != null) ? zooKeeper.connectString()
							: backendNodes.stream().map(RedisNode::uri).collect(Collectors.joining(","));
			Path stopFile = dir.resolve("stop");
			List<Path> clientLogs = new ArrayList<>();
			for (int i = 0; i < this.clients; i++) {
				Path log = dir.resolve("client" + i + ".log");
				clientLogs.add(log);
				clientProcesses.add(startClient(i, List.of("backend=" + this.backend, "nodes=" + nodeUris,
						"resource=" + resourceUri, "lock=faults-" + this.name, "ttlMs=" + this.ttlMs,
						"workMs=" + this.workMs, "durationMs=120000", "stopFile=" + stopFile, "log=" + log),
						dir.resolve("client" + i + ".out")));
			}
			FaultContext context = new FaultContext(backendNodes, postgres, zooKeeper, clientProcesses, clientLogs,
					controllerLog);
			// Spring Boot clients take 5 s to start alone, above 20 s on a loaded machine.
			context.awaitStarted(Duration.ofSeconds(90));
			context.awaitAcquisitions(this.clients, Duration.ofSeconds(30));
			RedisNode.sleep(this.settleMs);
			// The run window on the wall clock, for the ticks' nominal times.
			context.mark("WINDOW start " + System.currentTimeMillis());
			this.fault.inject(context);
			RedisNode.sleep(this.afterMs);
			context.mark("WINDOW end " + System.currentTimeMillis());
			Files.createFile(stopFile);
			for (Process client : clientProcesses) {
				if (!client.waitFor(15, TimeUnit.SECONDS)) {
					Signals.send(client.pid(), "CONT");
					client.destroyForcibly();
				}
			}
			try (SharedResource resource = SharedResource.connect(resourceUri)) {
				context.mark("FINAL plain " + resource.value(Resource.PLAIN));
				context.mark("FINAL fenced " + resource.value(Resource.FENCED));
				context.mark("TFINAL plain " + resource.value(BootFaultClient.TICK_PLAIN));
				context.mark("TFINAL fenced " + resource.value(BootFaultClient.TICK_FENCED));
			}
		}
		finally {
			for (Process client : clientProcesses) {
				if (client.isAlive()) {
					Signals.send(client.pid(), "CONT");
					client.destroyForcibly();
				}
			}
			nodes.forEach(RedisNode::close);
			if (postgres != null) {
				postgres.close();
			}
			if (zooKeeper != null) {
				zooKeeper.close();
			}
		}
		return Checker.check(this.name, dir);
	}

	private Process startClient(int index, List<String> arguments, Path output) throws IOException {
		List<String> command = new ArrayList<>();
		if (this.clientsInOwnGroups) {
			command.addAll(List.of("setpriv", "--regid", Integer.toString(FaultContext.clientGroup(index)),
					"--clear-groups", "--"));
		}
		command.addAll(Processes.javaCommand(this.clientMain));
		command.addAll(arguments);
		this.clientArguments.forEach((key, value) -> command.add(key + "=" + value));
		Map<String, String> environment = new HashMap<>(this.clientEnvironment);
		environment.putAll(this.clientEnvironments.getOrDefault(index, Map.of()));
		ProcessBuilder builder = new ProcessBuilder(command);
		builder.environment().putAll(environment);
		Process process = builder.redirectErrorStream(true).redirectOutput(output.toFile()).start();
		Processes.register(process);
		if (environment.containsKey("LD_PRELOAD")) {
			FakeClock.watch(process);
		}
		return process;
	}

	static void deleteRecursively(Path dir) throws IOException {
		if (!Files.exists(dir)) {
			return;
		}
		try (Stream<Path> paths = Files.walk(dir)) {
			for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
				Files.delete(path);
			}
		}
	}

}
