package dev.holdfast.sample.demo;

import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;

import tools.jackson.databind.JsonNode;

import dev.holdfast.sample.EmbeddedZooKeeper;
import dev.holdfast.sample.SampleApplication;
import dev.holdfast.sample.SampleController;
import dev.holdfast.sample.TickJob;

/**
 * The one-command demo: starts several instances of the sample application as separate JVMs
 * that share one database, sends concurrent reservations to all of them while printing
 * progress, watches the single-instance job for a few ticks, hands the leader group of the relay to
 * the instance running a long job by a yield, kills that instance to time the job's and the group's
 * moves to others, prints a report and exits
 * {@code 0} when every guarantee held, {@code 1} when one failed and {@code 2} on bad options
 * or an instance that did not start. Every JVM it started is stopped before it returns, also
 * on failure and on Ctrl-C.
 * <pre class="code">
 * ./mvnw -B -q -pl sample-app spring-boot:run -Dspring-boot.run.main-class=dev.holdfast.sample.demo.Demo
 * </pre>
 */
public final class Demo {

	/** The job's schedule in the demo: every 2 seconds. */
	static final String CRON = "*/2 * * * * *";

	private static final Duration TICK = Duration.ofSeconds(2);

	private static final List<String> JVM_ARGS = List.of("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
			"-Djava.awt.headless=true");

	private final DemoOptions options;

	private final PrintStream out;

	private final List<Instance> instances = new CopyOnWriteArrayList<>();

	private final List<RedisNode> redisNodes = new CopyOnWriteArrayList<>();

	private final AtomicReference<EmbeddedZooKeeper> zooKeeper = new AtomicReference<>();

	private final HttpClient http = HttpClient.newBuilder()
		.version(HttpClient.Version.HTTP_1_1)
		.connectTimeout(Duration.ofSeconds(5))
		.build();

	private final long started = System.nanoTime();

	private Demo(DemoOptions options, PrintStream out) {
		this.options = options;
		this.out = out;
	}

	public static void main(String[] args) {
		System.exit(run(System.out, args));
	}

	/**
	 * Runs the demo, printing to {@code out}.
	 * @return {@code 0} when every guarantee held, {@code 1} when one failed, {@code 2} on bad
	 * options or when an instance did not start or died
	 */
	public static int run(PrintStream out, String... args) {
		DemoOptions options;
		try {
			options = DemoOptions.parse(args);
		}
		catch (IllegalArgumentException ex) {
			out.println("Error: " + ex.getMessage());
			out.println(DemoOptions.USAGE);
			return 2;
		}
		Demo demo = new Demo(options, out);
		Thread stopOnExit = new Thread(demo::stopAll, "holdfast-demo-stop");
		Runtime.getRuntime().addShutdownHook(stopOnExit);
		try {
			DemoReport report = demo.execute();
			report.print(out);
			return report.failures().isEmpty() ? 0 : 1;
		}
		catch (IllegalStateException ex) {
			out.println("Error: " + ex.getMessage());
			return 2;
		}
		catch (IOException | RuntimeException ex) {
			out.println("Error: " + ex);
			return 2;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			out.println("Interrupted");
			return 2;
		}
		finally {
			demo.stopAll();
			try {
				Runtime.getRuntime().removeShutdownHook(stopOnExit);
			}
			catch (IllegalStateException ex) {
				// the JVM is shutting down: the hook runs (or ran) anyway
			}
		}
	}

	private DemoReport execute() throws IOException, InterruptedException {
		Path workDir = this.options.workDir().toAbsolutePath().normalize();
		Files.createDirectories(workDir);
		List<String> skus = skus();
		List<String> appArgs = appArgs(workDir, skus);
		startInstances(workDir, appArgs);
		Instant allUp = Instant.now();
		DemoReport.Load load = sendLoad(skus);
		List<DemoReport.Tick> ticks = awaitTicks(allUp);
		DemoReport report = report(load, skus, ticks, allUp); // read before the takeover kills an instance
		if (this.instances.size() < 3) {
			return report;
		}
		JobTakeover.Moves moves = JobTakeover.run(this.instances.subList(1, this.instances.size()),
				(line) -> say("%s", line));
		return report.withMoves(moves.job(), moves.yield(), moves.kill());
	}

	private List<String> skus() {
		if (this.options.freshDatabase()) {
			return this.options.skus();
		}
		// a server database keeps earlier runs' stock: this run's SKUs get names of their own
		String run = Long.toString(System.currentTimeMillis() % 1_000_000, 36);
		return this.options.skus().stream().map((sku) -> sku + "-" + run).toList();
	}

	private List<String> appArgs(Path workDir, List<String> skus) throws IOException, InterruptedException {
		List<String> args = new ArrayList<>();
		args.add("--spring.main.banner-mode=off");
		args.add("--sample.job.cron=" + CRON);
		args.add("--sample.reserve-wait-time=60s");
		skus.forEach((sku) -> args.add("--sample.stock." + sku + "=" + this.options.stock()));
		if (this.options.profile() != null) {
			args.add("--spring.profiles.active=" + this.options.profile());
		}
		if (this.options.backend() != null) {
			args.add("--holdfast.backend=" + this.options.backend());
		}
		if ("redlock".equals(this.options.profile())) {
			// independent masters of our own, on free ports; on one machine they are for the demo only
			for (int i = 0; i < 3; i++) {
				int port = freePort();
				RedisNode node = RedisNode.start(port, workDir.resolve("redis-" + port), Duration.ofSeconds(30));
				this.redisNodes.add(node);
				args.add("--holdfast.redlock.nodes[" + i + "]=" + node.address());
				say("Started redis-server %s for Redlock (log: %s)", node.address(), node.log());
			}
		}
		if ("zookeeper".equals(this.options.profile())) {
			// a server in this JVM on a free port, so that every instance is a client like the others
			quietZooKeeperServerLogs();
			Path data = workDir.resolve("zookeeper");
			deleteRecursively(data);
			EmbeddedZooKeeper server = EmbeddedZooKeeper.startUnlessRunning(freePort(), data);
			this.zooKeeper.set(server);
			args.add("--sample.zookeeper.embedded=false");
			args.add("--sample.zookeeper.connect-string=" + server.connectString());
			say("Started an embedded ZooKeeper server on %s", server.connectString());
		}
		if (this.options.freshDatabase()) {
			Path db = workDir.resolve("db");
			deleteRecursively(db);
			Files.createDirectories(db);
			args.add("--spring.datasource.url=jdbc:h2:file:" + db.resolve("holdfast-demo") + ";AUTO_SERVER=TRUE");
		}
		return args;
	}

	private void startInstances(Path workDir, List<String> appArgs) throws IOException, InterruptedException {
		String classpath = System.getProperty("java.class.path");
		say("Starting %d instances of the sample (%s), logs in %s", this.options.instances(), describeSetup(),
				workDir);
		for (int i = 1; i <= this.options.instances(); i++) {
			String id = "demo-" + i;
			List<String> args = new ArrayList<>(appArgs);
			args.add("--sample.instance-id=" + id);
			if (i > 1) {
				// the long job and the leader group for the takeover: not on the first, which serves H2
				// to the others
				args.addAll(JobTakeover.appArgs());
				args.addAll(LeaderTakeover.appArgs());
			}
			else {
				args.addAll(LeaderTakeover.nonCandidateArgs());
			}
			Instance instance = Instance.start(id, workDir.resolve(id + ".log"), JVM_ARGS, classpath,
					SampleApplication.class.getName(), args, this.http);
			this.instances.add(instance);
			say("  %s starting", id);
			if (i == 1) {
				// the first one creates the tables and, on H2, serves the database file to the others
				instance.awaitReady(this.options.startupTimeout());
				say("  %s ready on port %d", id, instance.port());
			}
		}
		for (Instance instance : this.instances.subList(1, this.instances.size())) {
			instance.awaitReady(this.options.startupTimeout());
			say("  %s ready on port %d", instance.id(), instance.port());
		}
	}

	/** The embedded server logs every connection at INFO; the demo's output is its progress. */
	private static void quietZooKeeperServerLogs() {
		if (org.slf4j.LoggerFactory.getLogger("org.apache.zookeeper") instanceof ch.qos.logback.classic.Logger logger) {
			logger.setLevel(ch.qos.logback.classic.Level.WARN);
		}
		// the takeover's kill resets its client's connection: a WARN with a stack trace, expected here
		if (org.slf4j.LoggerFactory.getLogger("org.apache.zookeeper.server.NIOServerCnxn")
				instanceof ch.qos.logback.classic.Logger logger) {
			logger.setLevel(ch.qos.logback.classic.Level.ERROR);
		}
	}

	private String describeSetup() {
		String profile = (this.options.profile() != null) ? "profile " + this.options.profile()
				: "no profile (the embedded H2 database)";
		return (this.options.backend() != null) ? profile + ", holdfast.backend=" + this.options.backend() : profile;
	}

	private DemoReport.Load sendLoad(List<String> skus) throws InterruptedException {
		int requests = this.options.requests();
		say("Sending %d reservations for %s, %d at a time, to all %d instances", requests, skus,
				this.options.concurrency(), this.instances.size());
		AtomicInteger done = new AtomicInteger();
		AtomicLong reserved = new AtomicLong();
		AtomicLong soldOut = new AtomicLong();
		AtomicLong fenced = new AtomicLong();
		AtomicLong lockTimeouts = new AtomicLong();
		AtomicLong backendFailures = new AtomicLong();
		AtomicLong errors = new AtomicLong();
		AtomicReference<String> firstError = new AtomicReference<>();
		ExecutorService clients = Executors.newFixedThreadPool(this.options.concurrency());
		long start = System.nanoTime();
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (int i = 0; i < requests; i++) {
				Instance instance = this.instances.get(i % this.instances.size());
				String sku = skus.get((i / this.instances.size()) % skus.size());
				futures.add(clients.submit(() -> {
					try {
						HttpResponse<String> response = instance.reserve(sku);
						int status = response.statusCode();
						if (status == 200) {
							String outcome = Instance.parse(response.body()).path("status").asString("");
							switch (outcome) {
								case "RESERVED" -> reserved.incrementAndGet();
								case "SOLD_OUT" -> soldOut.incrementAndGet();
								default -> error(errors, firstError, instance.id() + ": unexpected answer "
										+ response.body());
							}
						}
						else if (status == 409) {
							fenced.incrementAndGet();
						}
						else if (status == 503 && response.body().contains(SampleController.LOCK_NOT_ACQUIRED)) {
							lockTimeouts.incrementAndGet();
						}
						else if (status == 503 && response.body().contains(SampleController.LOCK_BACKEND_FAILED)) {
							backendFailures.incrementAndGet();
						}
						else {
							error(errors, firstError, instance.id() + ": HTTP " + status + " " + response.body());
						}
					}
					catch (IOException | RuntimeException ex) {
						error(errors, firstError, instance.id() + ": " + ex);
					}
					catch (InterruptedException ex) {
						Thread.currentThread().interrupt();
					}
					finally {
						done.incrementAndGet();
					}
				}));
			}
			long lastPrint = System.nanoTime();
			while (done.get() < requests) {
				Thread.sleep(100);
				if (System.nanoTime() - lastPrint >= TimeUnit.SECONDS.toNanos(1) || done.get() == requests) {
					lastPrint = System.nanoTime();
					say("  %d/%d: %d reserved, %d sold out, %d lock timeouts, %d backend failures, %d fenced, "
							+ "%d errors", done.get(), requests, reserved.get(), soldOut.get(), lockTimeouts.get(),
							backendFailures.get(), fenced.get(), errors.get());
				}
				for (Instance instance : this.instances) {
					if (!instance.isAlive()) {
						throw new IllegalStateException("Instance " + instance.id() + " died during the load; see "
								+ instance.log() + ":\n" + instance.logTail(30));
					}
				}
			}
			futures.clear();
		}
		finally {
			clients.shutdownNow();
		}
		Duration elapsed = Duration.ofNanos(System.nanoTime() - start);
		return new DemoReport.Load(requests, this.options.concurrency(), elapsed, reserved.get(), soldOut.get(),
				fenced.get(), lockTimeouts.get(), backendFailures.get(), errors.get(), firstError.get());
	}

	private static void error(AtomicLong errors, AtomicReference<String> first, String message) {
		errors.incrementAndGet();
		first.compareAndSet(null, message);
	}

	/**
	 * Waits until the job has run for the required number of ticks since every instance was up,
	 * then one tick more so that a late duplicate run of the last counted tick would be seen.
	 */
	private List<DemoReport.Tick> awaitTicks(Instant allUp) throws IOException, InterruptedException {
		int required = this.options.ticks();
		say("Watching the single-instance job until %d ticks have fired with all instances up", required);
		Duration timeout = TICK.multipliedBy(required + 3).plusSeconds(60);
		long deadline = System.nanoTime() + timeout.toNanos();
		Instant windowEnd = null;
		int lastSeen = -1;
		while (System.nanoTime() < deadline) {
			List<DemoReport.Tick> ticks = ticks(allUp, null);
			if (ticks.size() != lastSeen) {
				lastSeen = ticks.size();
				say("  %d/%d ticks%s", ticks.size(), required, ticks.isEmpty() ? ""
						: ", last ran on " + ticks.get(ticks.size() - 1).instances());
			}
			if (windowEnd == null && ticks.size() >= required) {
				windowEnd = ticks.get(required - 1).time();
			}
			if (windowEnd != null && Instant.now().isAfter(windowEnd.plus(TICK).plusMillis(500))) {
				return ticks(allUp, windowEnd);
			}
			Thread.sleep(500);
		}
		return ticks(allUp, Instant.now());
	}

	private List<DemoReport.Tick> ticks(Instant after, Instant until) throws IOException, InterruptedException {
		List<DemoReport.Tick> ticks = new ArrayList<>();
		for (JsonNode tick : this.instances.get(0).get("/runs")) {
			Instant time = Instant.parse(tick.path("tick").asString());
			if (time.isAfter(after) && (until == null || !time.isAfter(until))) {
				List<String> ranOn = new ArrayList<>();
				tick.path("instances").forEach((instance) -> ranOn.add(instance.asString()));
				ticks.add(new DemoReport.Tick(time, tick.path("runs").asInt(), ranOn));
			}
		}
		ticks.sort(Comparator.comparing(DemoReport.Tick::time));
		return ticks;
	}

	private DemoReport report(DemoReport.Load load, List<String> skus, List<DemoReport.Tick> ticks, Instant allUp)
			throws IOException, InterruptedException {
		JsonNode stock = this.instances.get(0).get("/stock");
		List<DemoReport.SkuStock> accounting = new ArrayList<>();
		for (String sku : skus) {
			int remaining = -1;
			for (JsonNode row : stock.path("stock")) {
				if (sku.equals(row.path("sku").asString())) {
					remaining = row.path("qty").asInt();
				}
			}
			if (remaining < 0) {
				throw new IllegalStateException("The stock table has no row for " + sku + ": " + stock);
			}
			long recorded = stock.path("reservations").path(sku).asLong(0);
			accounting.add(new DemoReport.SkuStock(sku, this.options.stock(), remaining, recorded));
		}
		long acquired = 0;
		long waited = 0;
		long maxWait = 0;
		long gaveUp = 0;
		long jobRuns = 0;
		long skips = 0;
		long leasesLost = 0;
		Set<String> backends = new LinkedHashSet<>();
		for (Instance instance : this.instances) {
			JsonNode stats = instance.get("/stats");
			backends.add(stats.path("backend").asString());
			JsonNode inventory = stats.path("locks").path("inventory");
			acquired += inventory.path("acquired").asLong();
			waited += inventory.path("waited").asLong();
			maxWait = Math.max(maxWait, inventory.path("maxWaitMillis").asLong());
			gaveUp += inventory.path("notAcquired").asLong();
			JsonNode job = stats.path("locks").path(TickJob.NAME);
			jobRuns += job.path("acquired").asLong();
			skips += job.path("skipped").asLong();
			for (JsonNode lock : stats.path("locks")) {
				leasesLost += lock.path("leasesLost").asLong();
			}
		}
		return new DemoReport(this.instances.size(), describeSetup(), this.options.expectedBackend(),
				String.join(", ", backends), load, accounting, ticks, DemoReport.missedTicks(CRON, allUp, ticks),
				this.options.ticks(), new DemoReport.Locks(acquired, waited, maxWait, gaveUp, jobRuns, skips,
						leasesLost), null);
	}

	/**
	 * Stops every instance this demo started: the others in parallel, then the first, which on
	 * H2 serves the database to them. Safe to call more than once.
	 */
	private void stopAll() {
		int stopped = 0;
		if (!this.instances.isEmpty()) {
			stopped += stopInParallel(this.instances.subList(1, this.instances.size()));
			stopped += stopInParallel(this.instances.subList(0, 1));
		}
		if (stopped > 0) {
			say("Stopped %d instances", stopped);
		}
		for (RedisNode node : this.redisNodes) {
			node.stop();
		}
		if (!this.redisNodes.isEmpty()) {
			say("Stopped %d redis-servers", this.redisNodes.size());
			this.redisNodes.clear();
		}
		EmbeddedZooKeeper server = this.zooKeeper.getAndSet(null);
		if (server != null) {
			server.close();
			say("Stopped the embedded ZooKeeper server");
		}
	}

	private int stopInParallel(List<Instance> instances) {
		List<Thread> stopping = new ArrayList<>();
		for (Instance instance : instances) {
			if (instance.isAlive()) {
				Thread thread = new Thread(() -> instance.stop(Duration.ofSeconds(15)), "stop-" + instance.id());
				thread.start();
				stopping.add(thread);
			}
		}
		for (Thread thread : stopping) {
			try {
				thread.join();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				instances.forEach((instance) -> instance.stop(Duration.ZERO));
				break;
			}
		}
		return stopping.size();
	}

	private void say(String format, Object... args) {
		double seconds = (System.nanoTime() - this.started) / 1e9;
		this.out.printf("[%5.1fs] %s%n", seconds, String.format(format, args));
		this.out.flush();
	}

	private static int freePort() throws IOException {
		try (ServerSocket socket = new ServerSocket(0)) {
			socket.setReuseAddress(true);
			return socket.getLocalPort();
		}
	}

	private static void deleteRecursively(Path dir) throws IOException {
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
