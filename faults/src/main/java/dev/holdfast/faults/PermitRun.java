package dev.holdfast.faults;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;

/**
 * A permit fault run: the backend (a {@code redis-server}, PostgreSQL, or a ZooKeeper ensemble of three),
 * a semaphore of {@code permits} permits on it, holders of one permit each in their own JVMs
 * ({@link PermitHolderClient}), and this JVM's own template on the same backend, which takes
 * permits as another instance would. Every process is started here, stopped by {@link #close()}
 * through its handle, and covered by the shutdown hook of {@link Processes}.
 */
final class PermitRun implements AutoCloseable {

	static final String SEMAPHORE = "faults-semaphore";

	/** Freshness of a renewal for {@link #awaitRenewal}: the next one is a third of a lease away. */
	private static final long FRESH_NANOS = Duration.ofMillis(30).toNanos();

	private final Path dir;

	private final String backendType;

	private final int permits;

	private final long leaseMs;

	private final List<AutoCloseable> servers = new ArrayList<>();

	private final List<Process> holders = new ArrayList<>();

	private final PrintWriter controllerLog;

	private String nodes;

	private FaultClient.Backend backend;

	private DefaultLockTemplate template;

	/** A holder JVM and its log. */
	record Holder(Process process, Path log) {
	}

	private PermitRun(Path dir, String backendType, int permits, long leaseMs) throws IOException {
		this.dir = dir;
		this.backendType = backendType;
		this.permits = permits;
		this.leaseMs = leaseMs;
		this.controllerLog = new PrintWriter(
				Files.newBufferedWriter(dir.resolve("controller.log"), StandardCharsets.UTF_8));
	}

	/**
	 * Starts the backend and this JVM's template on it, logs under {@code baseDir/name}.
	 * @param backendType {@code redis}, {@code jdbc} or {@code zookeeper}
	 */
	static PermitRun start(Path baseDir, String name, String backendType, int permits, long leaseMs)
			throws Exception {
		Path dir = baseDir.resolve(name);
		FaultRun.deleteRecursively(dir);
		Files.createDirectories(dir);
		PermitRun run = new PermitRun(dir, backendType, permits, leaseMs);
		try {
			run.nodes = startServer(dir, backendType, run.servers);
			run.backend = FaultClient.backend(backendType, Arrays.asList(run.nodes.split(",")));
			run.template = new DefaultLockTemplate(run.backend.backend(),
					LockSettings.defaults().withPollInterval(Duration.ofMillis(50)));
			return run;
		}
		catch (Exception | Error ex) {
			run.close();
			throw ex;
		}
	}

	/**
	 * Starts the server(s) of {@code backendType} under {@code dir}, adding them to {@code servers};
	 * returns the nodes for {@link FaultClient#backend}.
	 */
	static String startServer(Path dir, String backendType, List<AutoCloseable> servers) throws Exception {
		switch (backendType) {
			case "redis" -> {
				RedisNode redis = RedisNode.start(dir.resolve("node"), false);
				servers.add(redis);
				return redis.uri();
			}
			case "jdbc" -> {
				PostgresNode postgres = PostgresNode.start(dir.resolve("postgres"), true);
				servers.add(postgres);
				return postgres.jdbcUrl();
			}
			case "zookeeper" -> {
				ZooKeeperEnsemble zooKeeper = ZooKeeperEnsemble.start(dir.resolve("zookeeper"), 3, Map.of());
				servers.add(zooKeeper);
				return zooKeeper.connectString();
			}
			default -> throw new IllegalArgumentException("Unknown backend " + backendType
					+ ": permit and read-write runs take redis, jdbc or zookeeper");
		}
	}

	long leaseMs() {
		return this.leaseMs;
	}

	/** A permit taken by this JVM within {@code waitTime}, lease as the holders', renewed. */
	Optional<Lease> tryPermit(Duration waitTime) {
		return this.template.tryAcquirePermit(SEMAPHORE, null, this.permits,
				LockOptions.defaults().leaseTime(Duration.ofMillis(this.leaseMs)).waitTime(waitTime));
	}

	/** Starts a holder JVM and waits (up to 60 s) until it holds its permit. */
	Holder startHolder() throws IOException {
		int index = this.holders.size();
		Path log = this.dir.resolve("holder" + index + ".log");
		List<String> command = new ArrayList<>(Processes.javaCommand(PermitHolderClient.class.getName()));
		command.addAll(List.of("backend=" + this.backendType, "nodes=" + this.nodes, "semaphore=" + SEMAPHORE,
				"permits=" + this.permits, "leaseMs=" + this.leaseMs, "log=" + log,
				"stopFile=" + this.dir.resolve("stop")));
		Process process = new ProcessBuilder(command).redirectErrorStream(true)
			.redirectOutput(log.resolveSibling("holder" + index + ".out").toFile())
			.start();
		Processes.register(process);
		this.holders.add(process);
		Holder holder = new Holder(process, log);
		await(holder, Duration.ofSeconds(60), (lines) -> lines.stream().anyMatch((line) -> line.contains(" HELD ")));
		return holder;
	}

	/**
	 * Waits until the holder logged a renewal of its permit (a {@code VALID} line after its first
	 * two: the first estimate of a new lease may be corrected once, by more than 10 ms) less than
	 * 30 ms ago, so that a fault striking now finds a whole lease left; returns that
	 * validity end (monotonic nanoseconds).
	 */
	long awaitRenewal(Holder holder) throws IOException {
		await(holder, Duration.ofMillis(this.leaseMs + 30_000), (lines) -> {
			List<Checker.Event> valid = validity(lines);
			return valid.size() > 2 && System.nanoTime() - valid.get(valid.size() - 1).nanos() < FRESH_NANOS;
		});
		return lastValidityEnd(holder);
	}

	/** The validity end of the holder's permit as it last logged it (monotonic nanoseconds). */
	long lastValidityEnd(Holder holder) throws IOException {
		List<Checker.Event> valid = validity(Files.readAllLines(holder.log()));
		return Long.parseLong(valid.get(valid.size() - 1).fields()[1]);
	}

	/** SIGKILL, marked {@code KILL pid}; returns the stamp taken just before the signal. */
	long kill(Holder holder) throws InterruptedException {
		long at = System.nanoTime();
		this.controllerLog.println(at + " 0 KILL " + holder.process().pid());
		this.controllerLog.flush();
		holder.process().destroyForcibly();
		holder.process().waitFor(10, TimeUnit.SECONDS);
		return at;
	}

	private static List<Checker.Event> validity(List<String> lines) {
		return lines.stream()
			.filter((line) -> line.split(" ", 4).length >= 3)
			.map(Checker.Event::parse)
			.filter((event) -> event.type().equals("VALID"))
			.toList();
	}

	private static void await(Holder holder, Duration timeout, java.util.function.Predicate<List<String>> done)
			throws IOException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (System.nanoTime() < deadline) {
			if (Files.exists(holder.log()) && done.test(Files.readAllLines(holder.log()))) {
				return;
			}
			if (!holder.process().isAlive()) {
				throw new IllegalStateException("The permit holder exited, see " + holder.log().resolveSibling(
						holder.log().getFileName().toString().replace(".log", ".out")));
			}
			RedisNode.sleep(2);
		}
		throw new IllegalStateException("The permit holder logged no line as expected within " + timeout + ", see "
				+ holder.log());
	}

	/** Stops the holders (the stop file; SIGKILL after 15 s), this JVM's template, then the servers. */
	@Override
	public void close() throws IOException {
		Files.createFile(this.dir.resolve("stop"));
		try {
			for (Process holder : this.holders) {
				if (holder.isAlive() && !holder.waitFor(15, TimeUnit.SECONDS)) {
					holder.destroyForcibly();
				}
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		finally {
			this.holders.stream().filter(Process::isAlive).forEach(Process::destroyForcibly);
			if (this.template != null) {
				this.template.close();
			}
			if (this.backend != null) {
				this.backend.close();
			}
			for (AutoCloseable server : this.servers) {
				try {
					server.close();
				}
				catch (Exception ex) {
					System.err.println("Could not stop " + server + ": " + ex);
				}
			}
			this.controllerLog.close();
		}
	}

}
