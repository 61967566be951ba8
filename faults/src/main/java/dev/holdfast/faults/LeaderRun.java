package dev.holdfast.faults;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import java.util.stream.IntStream;

/**
 * A leader fault run: a resource Redis, the backend (a {@code redis-server} with or without
 * persistence, a ZooKeeper ensemble of three, or PostgreSQL, which then also holds the resource)
 * and instances of one leader group, each a {@link LeaderFaultClient} JVM, in its own group id
 * where partitions can be made (so that {@link Partition#client} cuts one off alone). The faults
 * act on it through its methods; {@link #history()} reads what the instances logged. Every
 * process is started here, stopped by {@link #close()} through its handle, and covered by the
 * shutdown hook of {@link Processes}.
 */
final class LeaderRun implements AutoCloseable {

	/** Freshness of a renewal for {@link #awaitLeader(boolean)}: the next one is a third of a lease away. */
	private static final long FRESH_NANOS = Duration.ofMillis(30).toNanos();

	private final Path dir;

	private final String backend;

	private final long leaseMs;

	private final List<RedisNode> redisNodes = new ArrayList<>();

	private RedisNode backendRedis;

	private ZooKeeperEnsemble zooKeeper;

	private PostgresNode postgres;

	private String nodes;

	private String resourceUri;

	private final List<Instance> instances = new ArrayList<>();

	private final PrintWriter controllerLog;

	/** Whether {@link Partition}s can be made here (root, iptables): instances then run in their own group ids. */
	private final boolean partitionable = Partition.unavailable().isEmpty();

	/** One instance of the group: its index (its group id is {@link FaultContext#clientGroup}), process and log. */
	record Instance(int index, Process process, Path log) {

		long pid() {
			return this.process.pid();
		}

		/** What the JVM printed: Holdfast's and the backend client's log. */
		Path output() {
			return this.log.resolveSibling("client" + this.index + ".out");
		}

	}

	private LeaderRun(Path dir, String backend, long leaseMs) throws IOException {
		this.dir = dir;
		this.backend = backend;
		this.leaseMs = leaseMs;
		this.controllerLog = new PrintWriter(
				Files.newBufferedWriter(dir.resolve("controller.log"), StandardCharsets.UTF_8));
	}

	/**
	 * Starts the servers and {@code count} instances, logs under {@code baseDir/name}, and waits until
	 * they started and one leads.
	 * @param backend {@code redis} (append-only file, {@code appendfsync always}),
	 * {@code redis-volatile} (no persistence), {@code zookeeper} or {@code jdbc}
	 */
	static LeaderRun start(Path baseDir, String name, String backend, int count, long leaseMs) throws Exception {
		Path dir = baseDir.resolve(name);
		FaultRun.deleteRecursively(dir);
		Files.createDirectories(dir);
		LeaderRun run = new LeaderRun(dir, backend, leaseMs);
		try {
			run.startServers();
			for (int i = 0; i < count; i++) {
				run.startInstance();
			}
			for (Instance instance : run.instances) {
				run.awaitLine(instance, (line) -> line.contains(" START "), Duration.ofSeconds(60));
			}
			run.awaitLeader(false);
			return run;
		}
		catch (Exception | Error ex) {
			run.close();
			throw ex;
		}
	}

	private void startServers() throws Exception {
		switch (this.backend) {
			case "redis", "redis-volatile" -> {
				this.backendRedis = RedisNode.start(this.dir.resolve("node"), this.backend.equals("redis"));
				this.redisNodes.add(this.backendRedis);
				this.nodes = this.backendRedis.uri();
			}
			case "zookeeper" -> {
				this.zooKeeper = ZooKeeperEnsemble.start(this.dir.resolve("zookeeper"), 3, Map.of());
				this.nodes = this.zooKeeper.connectString();
			}
			case "jdbc" -> {
				this.postgres = PostgresNode.start(this.dir.resolve("postgres"), true);
				this.nodes = this.postgres.jdbcUrl();
				this.resourceUri = this.nodes;
			}
			default -> throw new IllegalArgumentException("Unknown backend " + this.backend
					+ ": leader runs take redis, redis-volatile, zookeeper or jdbc");
		}
		if (this.resourceUri == null) {
			RedisNode resource = RedisNode.start(this.dir.resolve("resource"), false);
			this.redisNodes.add(resource);
			this.resourceUri = resource.uri();
		}
	}

	/** Starts one more instance, in the group id of its index where partitions can be made. */
	Instance startInstance() throws IOException {
		int index = this.instances.size();
		Path log = this.dir.resolve("client" + index + ".log");
		List<String> command = new ArrayList<>();
		if (this.partitionable) {
			command.addAll(List.of("setpriv", "--regid", Integer.toString(FaultContext.clientGroup(index)),
					"--clear-groups", "--"));
		}
		command.addAll(Processes.javaCommand(LeaderFaultClient.class.getName()));
		command.addAll(List.of("backend=" + this.backend.replace("-volatile", ""), "nodes=" + this.nodes,
				"resource=" + this.resourceUri, "group=faults-leader", "leaseMs=" + this.leaseMs, "workMs=200",
				"log=" + log, "stopFile=" + this.dir.resolve("stop")));
		Process process = new ProcessBuilder(command).redirectErrorStream(true)
			.redirectOutput(log.resolveSibling("client" + index + ".out").toFile())
			.start();
		Processes.register(process);
		Instance instance = new Instance(index, process, log);
		this.instances.add(instance);
		return instance;
	}

	/** Starts an instance and waits until it campaigns. */
	Instance replaceInstance() throws IOException {
		Instance instance = startInstance();
		awaitLine(instance, (line) -> line.contains(" START "), Duration.ofSeconds(60));
		return instance;
	}

	long leaseMs() {
		return this.leaseMs;
	}

	/** Logs a controller event on the shared clock; returns its stamp. */
	long mark(String event) {
		long now = System.nanoTime();
		this.controllerLog.println(now + " 0 " + event);
		this.controllerLog.flush();
		return now;
	}

	/**
	 * Waits (up to 30 s) until a live instance leads: its last {@code GRANT}/{@code REVOKE} is a
	 * grant and it logged the term's validity; with {@code fresh}, until that validity was renewed
	 * less than 30 ms ago, so that a fault striking now finds the validity it logged the last one.
	 */
	Instance awaitLeader(boolean fresh) throws IOException {
		long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
		while (System.nanoTime() < deadline) {
			for (Instance instance : this.instances) {
				if (!instance.process().isAlive()) {
					continue;
				}
				Optional<long[]> valid = currentValidity(instance);
				if (valid.isPresent() && (!fresh || System.nanoTime() - valid.get()[0] < FRESH_NANOS)) {
					return instance;
				}
			}
			RedisNode.sleep(2);
		}
		throw new IllegalStateException("No instance led within 30 s, see " + this.dir);
	}

	/** The token of {@code instance}'s current term, from its log. */
	long token(Instance instance) throws IOException {
		return currentValidity(instance).orElseThrow(() -> new IllegalStateException(instance + " does not lead"))[1];
	}

	/** The stamp and token of the last {@code VALID} line of a term not revoked, if the instance leads. */
	private Optional<long[]> currentValidity(Instance instance) throws IOException {
		long[] last = null;
		for (String line : lines(instance)) {
			Checker.Event event = Checker.Event.parse(line);
			if (event.type().equals("VALID")) {
				last = new long[] { event.nanos(), Long.parseLong(event.fields()[0]) };
			}
			else if (event.type().equals("REVOKE")) {
				last = null;
			}
		}
		return Optional.ofNullable(last);
	}

	/**
	 * Waits until an instance other than {@code except} logs, after {@code since}, an event that
	 * {@code matches}; returns it, or fails after {@code timeout}.
	 */
	Checker.Event awaitEvent(Instance except, long since, Predicate<Checker.Event> matches, Duration timeout)
			throws IOException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (System.nanoTime() < deadline) {
			for (Instance instance : this.instances) {
				if (instance == except) {
					continue;
				}
				for (String line : lines(instance)) {
					Checker.Event event = Checker.Event.parse(line);
					if (event.nanos() > since && matches.test(event)) {
						return event;
					}
				}
			}
			RedisNode.sleep(5);
		}
		throw new IllegalStateException("No instance logged the event awaited within " + timeout + ", see " + this.dir);
	}

	/**
	 * The first term granted to an instance other than {@code previous} after {@code since}, as the
	 * history has it: from the instance's first line about it ({@code GRANT}, or a {@code VALID}
	 * its probe logged before the listener ran).
	 */
	LeaderHistory.Term awaitGrant(long since, Instance previous, Duration timeout) throws IOException {
		Checker.Event grant = awaitEvent(previous, since, (event) -> event.type().equals("GRANT"), timeout);
		return history().term(grant.pid(), Long.parseLong(grant.fields()[0])).orElseThrow();
	}

	/** Waits until {@code instance} logs a line that {@code matches}; returns its stamp. */
	long awaitLine(Instance instance, Predicate<String> matches, Duration timeout) throws IOException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (System.nanoTime() < deadline) {
			for (String line : lines(instance)) {
				if (matches.test(line)) {
					return Checker.Event.parse(line).nanos();
				}
			}
			RedisNode.sleep(5);
		}
		throw new IllegalStateException(
				instance + " logged no line as expected within " + timeout + ", see " + instance.log());
	}

	private static List<String> lines(Instance instance) throws IOException {
		if (!Files.exists(instance.log())) {
			return List.of();
		}
		return Files.readAllLines(instance.log()).stream().filter((line) -> line.split(" ", 4).length >= 3).toList();
	}

	/** SIGKILL, marked {@code KILL pid} (the history ends the instance's term there). */
	long kill(Instance instance) throws InterruptedException {
		long at = mark("KILL " + instance.pid());
		instance.process().destroyForcibly();
		instance.process().waitFor(10, TimeUnit.SECONDS);
		return at;
	}

	/** SIGTERM: a graceful stop; waits until the JVM exited. */
	long stopGracefully(Instance instance) throws InterruptedException {
		long at = mark("TERM " + instance.pid());
		instance.process().destroy();
		if (!instance.process().waitFor(20, TimeUnit.SECONDS)) {
			throw new IllegalStateException(instance + " did not stop within 20 s of SIGTERM");
		}
		return at;
	}

	/** The ports that connect an instance to the backend. */
	int[] backendPorts() {
		if (this.zooKeeper != null) {
			return IntStream.range(0, this.zooKeeper.size()).map((server) -> this.zooKeeper.ports(server)[0]).toArray();
		}
		if (this.postgres != null) {
			return new int[] { java.net.URI.create(this.nodes.substring("jdbc:".length())).getPort() };
		}
		return new int[] { java.net.URI.create(this.nodes).getPort() };
	}

	/**
	 * The backend killed (SIGKILL: the Redis node, the PostgreSQL server, or every ZooKeeper server
	 * at once) and started again on its data after {@code downMs}; returns when it was started.
	 */
	void restartBackend(long downMs) throws Exception {
		if (this.backendRedis != null) {
			this.backendRedis.kill();
			RedisNode.sleep(downMs);
			this.backendRedis.start();
		}
		else if (this.postgres != null) {
			this.postgres.kill();
			RedisNode.sleep(downMs);
			this.postgres.start();
		}
		else {
			this.zooKeeper.restartAll(downMs);
		}
	}

	/** The resource the instances write, to try a stale write. */
	SharedResource resource() {
		return SharedResource.connect(this.resourceUri);
	}

	LeaderHistory history() throws IOException {
		return LeaderHistory.read(this.dir.resolve("controller.log"),
				this.instances.stream().map(Instance::log).toList());
	}

	/** Stops the instances (the stop file; SIGKILL after 15 s), then the servers. */
	@Override
	public void close() throws IOException {
		Files.createFile(this.dir.resolve("stop"));
		try {
			for (Instance instance : this.instances) {
				if (instance.process().isAlive() && !instance.process().waitFor(15, TimeUnit.SECONDS)) {
					Signals.send(instance.pid(), "CONT");
					instance.process().destroyForcibly();
				}
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		finally {
			for (Instance instance : this.instances) {
				if (instance.process().isAlive()) {
					Signals.send(instance.pid(), "CONT");
					instance.process().destroyForcibly();
				}
			}
			this.redisNodes.forEach(RedisNode::close);
			if (this.zooKeeper != null) {
				this.zooKeeper.close();
			}
			if (this.postgres != null) {
				this.postgres.close();
			}
			this.controllerLog.close();
		}
	}

}
