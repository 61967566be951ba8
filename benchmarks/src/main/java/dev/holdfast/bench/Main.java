package dev.holdfast.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.openjdk.jmh.results.BenchmarkResult;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.RunResult;
import org.openjdk.jmh.runner.Runner;
import org.openjdk.jmh.runner.options.ChainedOptionsBuilder;
import org.openjdk.jmh.runner.options.OptionsBuilder;
import org.openjdk.jmh.runner.options.TimeValue;
import org.openjdk.jmh.runner.options.VerboseMode;

import dev.holdfast.test.server.RedisServer;
import dev.holdfast.test.server.ZooKeeperServer;

/**
 * Runs every contender in one go and prints the table with ratios to the floors measured in the
 * same run. Starts its own servers: one redis-server, five more for Redlock (from the PATH, on free
 * ports) and PostgreSQL (embedded, or {@code -Dbench.pg=local}).
 * <p>
 * System properties: {@code bench.quick=true} (smoke run, a few seconds per benchmark),
 * {@code bench.only=redis,jdbc,redlock,zookeeper,annotation,contended,trybusy,leases} (a subset; {@code multi},
 * issue 31's several keys and semaphore permits, and {@code readwrite}, its read lock against the
 * exclusive lock, run only when named),
 * {@code bench.contenders=redis-floor,redis-holdfast} (only these contenders, or ids beginning so),
 * {@code bench.threads=1,8}, {@code bench.prof=jfr} (a JMH profiler for every fork),
 * {@code bench.out=path} (where the Markdown table goes, besides standard output).
 */
public final class Main {

	static final List<String> REDIS = List.of("redis-floor", "redis-holdfast", "redis-holdfast-sync-release",
			"redis-holdfast-annotation",
			"redis-redisson", "redis-shedlock", "redis-spring-integration");

	static final List<String> JDBC = List.of("jdbc-floor", "jdbc-holdfast", "jdbc-shedlock", "jdbc-spring-integration");

	static final List<String> REDLOCK = List.of("redlock-floor", "redlock-holdfast", "redlock-redisson");

	static final List<String> ZOOKEEPER = List.of("zookeeper-floor", "zookeeper-holdfast", "zookeeper-curator",
			"zookeeper-shedlock");

	static final List<String> CONTENDED = List.of("redis-floor", "redis-holdfast", "redis-redisson",
			"redis-spring-integration", "jdbc-floor", "jdbc-holdfast", "jdbc-spring-integration", "zookeeper-floor",
			"zookeeper-holdfast", "zookeeper-curator");

	/** Contenders of the busy-{@code tryAcquire} scenario: every one that has a single attempt. */
	static final List<String> TRY_BUSY = List.of("redis-floor", "redis-holdfast", "redis-shedlock", "redis-redisson",
			"redis-spring-integration", "jdbc-floor", "jdbc-holdfast", "jdbc-shedlock", "zookeeper-floor",
			"zookeeper-holdfast", "zookeeper-curator", "zookeeper-shedlock");

	static final String ALL_GROUPS = "redis,jdbc,redlock,zookeeper,annotation,contended,trybusy,leases";

	private final boolean quick = Boolean.getBoolean("bench.quick");

	private final Set<String> only = new TreeSet<>(Arrays.asList(
			System.getProperty("bench.only", ALL_GROUPS).split(",")));

	private final List<Integer> threads = Arrays.stream(System.getProperty("bench.threads", "1,8").split(","))
		.map(String::trim)
		.map(Integer::valueOf)
		.toList();

	private final List<String> jvmArgs = new ArrayList<>(List.of("-Xms1g", "-Xmx1g"));

	/**
	 * Throughput by contender, then by thread count: mean ops/s, error, best iteration, bytes/op,
	 * server and client CPU µs/op.
	 */
	private final Map<String, Map<Integer, double[]>> throughput = new LinkedHashMap<>();

	/** Mean ns/op, best iteration ns/op, bytes/op, by benchmark method. */
	private final Map<String, double[]> annotation = new LinkedHashMap<>();

	/** CPU ns per call, by benchmark method of the annotation group. */
	private Map<String, Double> annotationCpu = Map.of();

	/** {@link #throughput} of the {@code multi} group ({@link SeveralKeysClients}). */
	private final Map<String, Map<Integer, double[]>> severalKeys = new LinkedHashMap<>();

	/** The {@code multi} group in alternating rounds ({@link InterleavedRatio}): by thread count, ops/s per round by contender. */
	private final Map<Integer, Map<String, List<Double>>> severalKeysRounds = new LinkedHashMap<>();

	/** {@link #severalKeys} and {@link #severalKeysRounds} of the {@code readwrite} group ({@link ReadWriteClients}). */
	private final Map<String, Map<Integer, double[]>> readWrite = new LinkedHashMap<>();

	private final Map<Integer, Map<String, List<Double>>> readWriteRounds = new LinkedHashMap<>();

	private final List<ContendedHarness.Result> contended = new ArrayList<>();

	private final List<ContendedHarness.Result> tryBusy = new ArrayList<>();

	private final Provenance provenance = new Provenance();

	private final List<HeldLeasesHarness.Result> leases = new ArrayList<>();

	private final List<String> notes = new ArrayList<>();

	public static void main(String[] args) throws Exception {
		new Main().run();
		System.exit(0);
	}

	private void run() throws Exception {
		long started = System.nanoTime();
		List<AutoCloseable> servers = new ArrayList<>();
		Thread stopServers = new Thread(() -> stopAll(servers), "bench-stop-servers");
		Runtime.getRuntime().addShutdownHook(stopServers);
		try {
			RedisServer redis = null;
			if (needs("redis", "contended", "trybusy", "leases", "redlock", "multi", "readwrite")) {
				redis = RedisServer.start();
				servers.add(redis);
				this.jvmArgs.add("-Dbench.redis.port=" + redis.port());
				System.setProperty("bench.redis.port", Integer.toString(redis.port()));
				cpuOf("redis", Long.toString(redis.pid()));
			}
			if (needs("redlock")) {
				List<String> ports = new ArrayList<>();
				List<String> pids = new ArrayList<>();
				for (int i = 0; i < 5; i++) {
					RedisServer node = RedisServer.start();
					servers.add(node);
					ports.add(Integer.toString(node.port()));
					pids.add(Long.toString(node.pid()));
				}
				cpuOf("redlock", String.join(",", pids));
				this.jvmArgs.add("-Dbench.redlock.ports=" + String.join(",", ports));
				System.setProperty("bench.redlock.ports", String.join(",", ports));
			}
			if (needs("zookeeper", "contended", "trybusy")) {
				// Like the Redis servers (no persistence), the server does not fsync its transaction log
				// here: on this machine's disk an fsync per write would be all that is measured.
				System.setProperty("zookeeper.forceSync", "no");
				ZooKeeperServer zooKeeper = ZooKeeperServer.start();
				servers.add(zooKeeper);
				this.jvmArgs.add("-Dbench.zookeeper.connect=" + zooKeeper.connectString());
				System.setProperty("bench.zookeeper.connect", zooKeeper.connectString());
				cpuOf("zookeeper", Long.toString(ProcessHandle.current().pid()));
				this.notes.add("ZooKeeper: one standalone server " + org.apache.zookeeper.Version.getFullVersion()
						+ " inside the runner's JVM (Curator's TestingServer, forceSync=no), Curator 5.9.0 clients.");
			}
			Postgres postgres = null;
			if (needs("jdbc", "contended", "trybusy", "multi", "readwrite")) {
				postgres = startPostgres();
				servers.add(postgres);
				postgres.createTables();
				this.jvmArgs.add("-Dbench.jdbc.url=" + postgres.url);
				this.jvmArgs.add("-Dbench.jdbc.user=" + postgres.user);
				System.setProperty("bench.jdbc.url", postgres.url);
				System.setProperty("bench.jdbc.user", postgres.user);
				try {
					cpuOf("pg", Long.toString(postgres.postmasterPid()));
				}
				catch (Exception ex) {
					log("PostgreSQL's server processes not found, no server CPU for JDBC: " + ex);
				}
				this.notes.add("Database: " + postgres.description());
			}
			if (needs("redis")) {
				uncontended("redis", REDIS, this.throughput);
			}
			if (needs("jdbc")) {
				uncontended("jdbc", JDBC, this.throughput);
			}
			if (needs("redlock")) {
				uncontended("redlock", REDLOCK, this.throughput);
			}
			if (needs("zookeeper")) {
				uncontended("zookeeper", ZOOKEEPER, this.throughput);
			}
			if (needs("multi")) {
				uncontended("multi", SeveralKeysClients.CONTENDERS, this.severalKeys);
				inRounds("multi", SeveralKeysClients.CONTENDERS, this.severalKeysRounds);
			}
			if (needs("readwrite")) {
				uncontended("readwrite", ReadWriteClients.CONTENDERS, this.readWrite);
				inRounds("readwrite", ReadWriteClients.CONTENDERS, this.readWriteRounds);
			}
			if (needs("annotation")) {
				this.provenance.start("annotation");
				annotationOverhead();
				log("annotation overhead in CPU time (this JVM)");
				this.annotationCpu = CpuTimeProbe.run(this.quick);
				log("  " + this.annotationCpu);
				this.provenance.end("annotation");
			}
			if (needs("contended")) {
				contended("contended", CONTENDED, ContendedHarness.Mode.WAIT, this.contended);
			}
			if (needs("trybusy")) {
				contended("trybusy", TRY_BUSY, ContendedHarness.Mode.TRY_BUSY, this.tryBusy);
			}
			if (needs("leases")) {
				this.provenance.start("leases");
				int count = this.quick ? 2_000 : 10_000;
				Duration window = Duration.ofSeconds(this.quick ? 3 : 6);
				log("held leases: holdfast");
				this.leases.add(HeldLeasesHarness.holdfast(redis.port(), count, window));
				log("held leases: redisson");
				this.leases.add(HeldLeasesHarness.redisson(redis.port(), count, window));
				this.provenance.end("leases");
			}
		}
		finally {
			stopAll(servers);
			Runtime.getRuntime().removeShutdownHook(stopServers);
		}
		String report = new Report(this.quick, this.throughput, this.annotation, this.annotationCpu, this.contended,
				this.tryBusy, this.leases, this.notes, this.provenance, Duration.ofNanos(System.nanoTime() - started))
			.render() + GroupTable.render(GroupTable.SEVERAL_KEYS, this.severalKeys, this.severalKeysRounds, this.provenance)
				+ GroupTable.render(ReadWriteClients.TABLE, this.readWrite, this.readWriteRounds, this.provenance);
		System.out.println();
		System.out.println(report);
		Path out = Path.of(System.getProperty("bench.out",
				Files.isDirectory(Path.of("benchmarks", "target")) ? "benchmarks/target/results.md" : "results.md"));
		Files.writeString(out, report);
		log("table written to " + out.toAbsolutePath());
	}

	/** Names the server processes of a backend for {@link ServerCpu}, here and in the JMH forks. */
	private void cpuOf(String backend, String pids) {
		this.jvmArgs.add("-Dbench.cpu." + backend + "=" + pids);
		System.setProperty("bench.cpu." + backend, pids);
	}

	private static synchronized void stopAll(List<AutoCloseable> servers) {
		for (AutoCloseable server : servers) {
			try {
				server.close();
			}
			catch (Exception ex) {
				log("could not stop " + server + ": " + ex);
			}
		}
		servers.clear();
	}

	private Postgres startPostgres() throws Exception {
		String mode = System.getProperty("bench.pg", "embedded");
		try {
			return Postgres.start(mode);
		}
		catch (Exception ex) {
			log("embedded PostgreSQL did not start (" + ex + "); using the local one on 127.0.0.1:5432");
			this.notes.add("Embedded PostgreSQL did not start here (" + rootCause(ex) + "); the local server was used.");
			return Postgres.start("local");
		}
	}

	private static String rootCause(Throwable ex) {
		Throwable cause = ex;
		while (cause.getCause() != null) {
			cause = cause.getCause();
		}
		return String.valueOf(cause.getMessage()).lines().findFirst().orElse("");
	}

	private boolean needs(String... groups) {
		for (String group : groups) {
			if (this.only.contains(group)) {
				return true;
			}
		}
		return false;
	}

	private ChainedOptionsBuilder options() {
		ChainedOptionsBuilder options = new OptionsBuilder().forks(1)
			.warmupIterations(this.quick ? 1 : 5)
			.warmupTime(TimeValue.seconds(1))
			.measurementIterations(this.quick ? 2 : 5)
			.measurementTime(TimeValue.seconds(1))
			.jvmArgsAppend(this.jvmArgs.toArray(String[]::new))
			.shouldFailOnError(false)
			.addProfiler("gc")
			.verbosity(VerboseMode.NORMAL);
		String profiler = System.getProperty("bench.prof");
		if (profiler != null && !profiler.isBlank()) {
			options.addProfiler(profiler);
		}
		return options;
	}

	/**
	 * The contenders that {@code -Dbench.contenders} names (ids or their beginnings, such as
	 * {@code redis-floor,redis-holdfast} or {@code jdbc}); all of them if it is not set.
	 */
	private List<String> selected(List<String> contenders) {
		String names = System.getProperty("bench.contenders", "");
		if (names.isBlank()) {
			return contenders;
		}
		List<String> prefixes = Arrays.stream(names.split(",")).map(String::trim).filter((n) -> !n.isEmpty()).toList();
		return contenders.stream().filter((c) -> prefixes.stream().anyMatch(c::startsWith)).toList();
	}

	private void contended(String section, List<String> contenders, ContendedHarness.Mode mode,
			List<ContendedHarness.Result> results) {
		Duration warmup = Duration.ofSeconds(this.quick ? 1 : 3);
		Duration measure = Duration.ofSeconds(this.quick ? 3 : 10);
		this.provenance.start(section);
		for (String contender : selected(contenders)) {
			if ((contender.startsWith("jdbc") && System.getProperty("bench.jdbc.url") == null)
					|| (contender.startsWith("redis") && System.getProperty("bench.redis.port") == null)
					|| (contender.startsWith("zookeeper") && System.getProperty("bench.zookeeper.connect") == null)) {
				continue;
			}
			log(section + ": " + contender);
			ContendedHarness.Result result = ContendedHarness.run(contender, mode, warmup, measure);
			log("  " + result);
			results.add(result);
		}
		this.provenance.end(section);
	}

	private void uncontended(String group, List<String> all, Map<String, Map<Integer, double[]>> scores)
			throws Exception {
		List<String> contenders = selected(all);
		if (contenders.isEmpty()) {
			return;
		}
		this.provenance.start(group);
		for (int threadCount : this.threads) {
			log("uncontended, " + threadCount + " thread(s): " + contenders);
			Collection<RunResult> results = new Runner(options().addProfiler(ServerCpuProfiler.class)
				.include(UncontendedBenchmark.class.getName() + ".lockUnlock")
				.param("contender", contenders.toArray(String[]::new))
				.threads(threadCount)
				.build()).run();
			for (RunResult result : results) {
				String contender = result.getParams().getParam("contender");
				scores.computeIfAbsent(contender, (c) -> new LinkedHashMap<>())
					.put(threadCount, new double[] { result.getPrimaryResult().getScore(),
							result.getPrimaryResult().getScoreError(), best(result, true), bytesPerOp(result),
							secondary(result, ServerCpuProfiler.SERVER), secondary(result, ServerCpuProfiler.CLIENT) });
			}
		}
		this.provenance.end(group);
	}

	/**
	 * The {@code group}'s contenders again ({@code multi}, {@code readwrite}), each backend's in
	 * alternating rounds of 500 ms in this JVM (20 rounds, 6 in a quick run): ratios of rounds a
	 * second apart, steadier on a loaded machine than those of JMH forks minutes apart.
	 */
	private void inRounds(String group, List<String> all, Map<Integer, Map<String, List<Double>>> byThreads)
			throws Exception {
		this.provenance.start(group + "-rounds");
		for (int threadCount : this.threads) {
			Map<String, List<Double>> rounds = byThreads.computeIfAbsent(threadCount, (t) -> new LinkedHashMap<>());
			for (String backend : new String[] { "redis-", "jdbc-" }) {
				List<String> contenders = selected(all).stream()
					.filter((c) -> c.startsWith(backend))
					.toList();
				if (!contenders.isEmpty()) {
					log(group + " in rounds, " + threadCount + " thread(s): " + contenders);
					rounds.putAll(InterleavedRatio.measure(contenders, threadCount, this.quick ? 6 : 20, 500));
				}
			}
		}
		this.provenance.end(group + "-rounds");
	}

	private void annotationOverhead() throws Exception {
		log("annotation overhead (memory backend)");
		Collection<RunResult> results = new Runner(
				options().include(AnnotationOverheadBenchmark.class.getName()).threads(1).build())
			.run();
		for (RunResult result : results) {
			String label = result.getParams().getBenchmark();
			this.annotation.put(label.substring(label.lastIndexOf('.') + 1), new double[] {
					result.getPrimaryResult().getScore(), best(result, false), bytesPerOp(result) });
		}
	}

	/**
	 * The best measurement iteration: on a machine that other jobs load, the iteration that was
	 * disturbed least is the closest to the code's own cost.
	 */
	private static double best(RunResult result, boolean higherIsBetter) {
		double best = Double.NaN;
		for (BenchmarkResult benchmark : result.getBenchmarkResults()) {
			for (IterationResult iteration : benchmark.getIterationResults()) {
				double score = iteration.getPrimaryResult().getScore();
				if (Double.isNaN(best) || (higherIsBetter ? score > best : score < best)) {
					best = score;
				}
			}
		}
		return best;
	}

	private static double secondary(RunResult result, String label) {
		Result<?> value = result.getSecondaryResults().get(label);
		return (value != null) ? value.getScore() : Double.NaN;
	}

	/** Bytes allocated per operation (JMH's gc profiler): independent of the machine's load. */
	private static double bytesPerOp(RunResult result) {
		Result<?> norm = result.getSecondaryResults().get("gc.alloc.rate.norm");
		return (norm != null) ? norm.getScore() : Double.NaN;
	}

	static void log(String message) {
		System.out.println("[bench] " + message);
	}

	static String now() {
		return ZonedDateTime.now().format(DateTimeFormatter.ISO_OFFSET_DATE_TIME.withLocale(Locale.ROOT));
	}

}
