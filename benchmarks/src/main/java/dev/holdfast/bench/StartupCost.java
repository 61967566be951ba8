package dev.holdfast.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.ToDoubleFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * What Holdfast costs the sample application at startup: the sample on its {@code redis}
 * profile, started with and without Holdfast, {@code bench.startup.runs} times each (5), in
 * alternation after one start of each that is not counted, and the medians compared in a Markdown
 * table (printed, and written to {@code bench.startup.out}, default
 * {@code benchmarks/target/startup.md}).
 * <p>
 * Both sides run the same jar (the sample's, extracted as Spring Boot's {@code jarmode=tools}
 * extracts it) on the same class path and profile, against the Redis at
 * {@code bench.startup.redis} (127.0.0.1:6379). Without Holdfast, its two auto-configurations are
 * excluded ({@code spring.autoconfigure.exclude}) and {@link StartupBaseline} gives the sample's
 * controller the one bean it takes from them. Measured per start:
 * <ul>
 * <li>start: the JVM's uptime when Spring Boot logs "Started" (its "process running for");</li>
 * <li>after {@code bench.startup.settle} more seconds (5), so that work a start leaves running
 * counts: classes loaded and live threads (the JVM's performance counters, read without attaching),
 * then, after a full GC, heap used and non-heap used (metaspace and code cache).</li>
 * </ul>
 * A second comparison, {@code app-uses-redis}, adds {@link StartupRedisUse} to both sides: an
 * application that opens its own Redis connection at startup pays the Lettuce client itself. A
 * third, {@code app-schedules-a-job}, adds {@link StartupScheduledJob} to both sides: an
 * application that runs a scheduled job has Spring Boot's scheduler, on which Holdfast's jobs then
 * run. {@code bench.startup.only} names the ones to run (comma-separated ids).
 */
public final class StartupCost {

	static final String MAIN_CLASS = "dev.holdfast.sample.SampleApplication";

	static final String HOLDFAST_AUTO_CONFIGURATIONS = "dev.holdfast.autoconfigure.HoldfastAutoConfiguration,"
			+ "dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration";

	private static final Pattern STARTED = Pattern
		.compile("Started \\S+ in [0-9.]+ seconds \\(process running for ([0-9.]+)\\)");

	private static final Pattern HEAP_USED = Pattern.compile("heap\\s+total \\d+K, used (\\d+)K");

	private static final Pattern METASPACE_USED = Pattern.compile("Metaspace\\s+used (\\d+)K");

	private static final Pattern CODE_USED = Pattern.compile("^Code\\S*( '[^']*')?: size=\\d+Kb used=(\\d+)Kb",
			Pattern.MULTILINE);

	private static final Pattern THREAD_NAME = Pattern.compile("^\"(.*?)\" ", Pattern.MULTILINE);

	private static final Duration START_TIMEOUT = Duration.ofMinutes(3);

	/** One comparison: its title and the sources added to both of its sides. */
	record Comparison(String id, String title, List<String> sources) {
	}

	/** What one start measured. */
	record Start(double seconds, double cpuSeconds, Map<String, Double> cpuByThreads, long classes, long threads,
			double heapMb, double nonHeapMb, Set<String> threadNames) {
	}

	private final int runs = Integer.getInteger("bench.startup.runs", 5);

	private final Duration settle = Duration.ofSeconds(Long.getLong("bench.startup.settle", 5));

	private final Path jar = Path.of(System.getProperty("bench.startup.jar",
			"sample-app/target/sample-app-0.1.0-SNAPSHOT.jar"));

	private final Path work = Path.of(System.getProperty("bench.startup.work", "benchmarks/target/startup"));

	private final String redis = System.getProperty("bench.startup.redis", "127.0.0.1:6379");

	private final Path bin = Path.of(System.getProperty("java.home"), "bin");

	private int started;

	public static void main(String[] args) throws Exception {
		new StartupCost().run();
	}

	private void run() throws Exception {
		if (!Files.isRegularFile(this.jar)) {
			fail("No sample jar at " + this.jar.toAbsolutePath() + ": build it first (./mvnw -B -q install -DskipTests),"
					+ " or name it with -Dbench.startup.jar=...");
		}
		if (!Files.isExecutable(this.bin.resolve("jcmd"))) {
			fail("No jcmd in " + this.bin + ": run this with a JDK, not a JRE");
		}
		String[] hostPort = this.redis.split(":");
		checkRedis(hostPort[0], Integer.parseInt(hostPort[1]));
		Path classPath = prepare();
		List<Comparison> comparisons = new ArrayList<>(List.of(
				new Comparison("sample", "The sample as it is (its only use of Redis is Holdfast's)", List.of()),
				new Comparison("app-uses-redis", "The sample as an application that opens its own Redis connection "
						+ "at startup (`StartupRedisUse` on both sides)", List.of(StartupRedisUse.class.getName())),
				new Comparison("app-schedules-a-job", "The sample as an application that schedules a job of its own "
						+ "every 2 s (`StartupScheduledJob` on both sides)", List.of(StartupScheduledJob.class.getName()))));
		Set<String> only = Set.of(System.getProperty("bench.startup.only", "sample,app-uses-redis").split(","));
		comparisons.removeIf((comparison) -> !only.contains(comparison.id()));
		StringBuilder report = new StringBuilder();
		report.append("Measured ")
			.append(ZonedDateTime.now().format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'xxx")))
			.append(", ")
			.append(Runtime.getRuntime().availableProcessors())
			.append(" cores, Java ")
			.append(System.getProperty("java.version"))
			.append(", load average ")
			.append(Provenance.loadAverage())
			.append(" at the start; ")
			.append(this.runs)
			.append(" starts per side, medians; Redis at ")
			.append(this.redis)
			.append(".\n");
		for (Comparison comparison : comparisons) {
			report.append('\n').append(compare(comparison, classPath, hostPort));
		}
		report.append("\nLoad average at the end: ").append(Provenance.loadAverage()).append(".\n");
		report.append("Command: `").append(command()).append("`\n");
		System.out.println();
		System.out.println(report);
		Path out = Path.of(System.getProperty("bench.startup.out", "benchmarks/target/startup.md"));
		Files.createDirectories(out.toAbsolutePath().getParent());
		Files.writeString(out, report.toString());
		System.out.println("Written to " + out);
	}

	/** Extracts the sample's jar and writes the baseline's classes; returns the class path of both sides. */
	private Path prepare() throws IOException, InterruptedException {
		deleteTree(this.work);
		Path app = this.work.resolve("app");
		Path baseline = this.work.resolve("baseline");
		Files.createDirectories(this.work);
		Process extract = new ProcessBuilder(this.bin.resolve("java").toString(), "-Djarmode=tools", "-jar",
				this.jar.toAbsolutePath().toString(), "extract", "--destination", app.toAbsolutePath().toString())
			.redirectErrorStream(true)
			.redirectOutput(this.work.resolve("extract.log").toFile())
			.start();
		if (extract.waitFor() != 0) {
			fail("Could not extract " + this.jar + ": see " + this.work.resolve("extract.log"));
		}
		for (Class<?> type : List.of(StartupBaseline.class, StartupBaseline.NoLeases.class, StartupRedisUse.class,
				StartupRedisUse.Ping.class, StartupScheduledJob.class)) {
			String resource = type.getName().replace('.', '/') + ".class";
			Path target = baseline.resolve(resource);
			Files.createDirectories(target.getParent());
			try (InputStream in = StartupCost.class.getClassLoader().getResourceAsStream(resource)) {
				Files.copy(in, target);
			}
		}
		Path appJar = app.resolve(this.jar.getFileName());
		return Path.of(appJar.toAbsolutePath() + java.io.File.pathSeparator + baseline.toAbsolutePath());
	}

	private String compare(Comparison comparison, Path classPath, String[] hostPort) throws Exception {
		List<String> common = new ArrayList<>(List.of("--spring.profiles.active=redis", "--server.port=0",
				"--spring.data.redis.host=" + hostPort[0], "--spring.data.redis.port=" + hostPort[1]));
		List<String> withSources = comparison.sources();
		List<String> withoutSources = Stream.concat(Stream.of(StartupBaseline.class.getName()),
				comparison.sources().stream()).toList();
		List<String> with = new ArrayList<>(common);
		if (!withSources.isEmpty()) {
			with.add("--spring.main.sources=" + String.join(",", withSources));
		}
		List<String> without = new ArrayList<>(common);
		without.add("--spring.main.sources=" + String.join(",", withoutSources));
		without.add("--spring.autoconfigure.exclude=" + HOLDFAST_AUTO_CONFIGURATIONS);
		System.out.println("== " + comparison.id() + ": one start of each not counted, then " + this.runs
				+ " of each in alternation");
		start(classPath, without, "without");
		start(classPath, with, "with");
		List<Start> withoutStarts = new ArrayList<>();
		List<Start> withStarts = new ArrayList<>();
		for (int i = 0; i < this.runs; i++) {
			boolean withFirst = (i % 2 == 1);
			if (withFirst) {
				withStarts.add(start(classPath, with, "with"));
			}
			withoutStarts.add(start(classPath, without, "without"));
			if (!withFirst) {
				withStarts.add(start(classPath, with, "with"));
			}
		}
		return table(comparison, withoutStarts, withStarts);
	}

	private Start start(Path classPath, List<String> arguments, String side) throws Exception {
		Path dir = this.work.resolve("run-" + (++this.started));
		Files.createDirectories(dir);
		Path log = dir.resolve("out.log");
		List<String> command = new ArrayList<>(List.of(this.bin.resolve("java").toString(), "-cp",
				classPath.toString(), MAIN_CLASS));
		command.addAll(arguments);
		Process process = new ProcessBuilder(command).directory(dir.toFile())
			.redirectErrorStream(true)
			.redirectOutput(log.toFile())
			.start();
		try {
			double seconds = awaitStarted(process, log);
			double cpuSeconds = cpuSeconds(process.pid());
			Map<String, Double> cpuByThreads = ThreadCpu.of(process.pid());
			Thread.sleep(this.settle.toMillis());
			String pid = Long.toString(process.pid());
			Map<String, String> counters = counters(jcmd(pid, "PerfCounter.print"));
			long classes = number(counters, "java.cls.loadedClasses") + number(counters, "java.cls.sharedLoadedClasses")
					- number(counters, "java.cls.unloadedClasses") - number(counters, "java.cls.sharedUnloadedClasses");
			long threads = number(counters, "java.threads.live");
			Set<String> names = threadNames(jcmd(pid, "Thread.print"));
			jcmd(pid, "GC.run");
			String heap = jcmd(pid, "GC.heap_info");
			double heapMb = kilobytes(HEAP_USED, heap, 1) / 1024.0;
			double metaspaceMb = kilobytes(METASPACE_USED, heap, 1) / 1024.0;
			double codeMb = sum(CODE_USED, jcmd(pid, "Compiler.codecache"), 2) / 1024.0;
			Start start = new Start(seconds, cpuSeconds, cpuByThreads, classes, threads, heapMb, metaspaceMb + codeMb, names);
			System.out.printf(Locale.ROOT, "%-8s run-%-3d start %.2f s (CPU %.2f s), %d classes, %d threads, "
					+ "heap %.1f MB, non-heap %.1f MB, load %s%n", side, this.started, seconds, cpuSeconds, classes,
					threads, heapMb, start.nonHeapMb(), Provenance.loadAverage());
			return start;
		}
		finally {
			process.destroy();
			if (!process.waitFor(60, TimeUnit.SECONDS)) {
				process.destroyForcibly().waitFor();
			}
		}
	}

	private static double awaitStarted(Process process, Path log) throws IOException, InterruptedException {
		long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
		while (System.nanoTime() < deadline) {
			Matcher matcher = STARTED.matcher(Files.readString(log));
			if (matcher.find()) {
				return Double.parseDouble(matcher.group(1));
			}
			if (!process.isAlive()) {
				fail("The sample exited with " + process.exitValue() + " before it started: see " + log);
			}
			Thread.sleep(10);
		}
		fail("The sample did not start within " + START_TIMEOUT + ": see " + log);
		return 0;
	}

	private String table(Comparison comparison, List<Start> without, List<Start> with) {
		StringBuilder table = new StringBuilder("#### ").append(comparison.title()).append("\n\n");
		table.append("| median of ").append(this.runs).append(" starts | without Holdfast | with Holdfast | Holdfast adds | goal |\n");
		table.append("|---|---:|---:|---:|---|\n");
		row(table, "start: JVM uptime at \"Started\" (s)", without, with, Start::seconds, "%.2f", "at most +0.4 s");
		row(table, "CPU time of the JVM at \"Started\" (s), for reference", without, with, Start::cpuSeconds, "%.2f",
				"");
		for (String group : ThreadCpu.GROUPS) {
			row(table, "&nbsp;&nbsp;of which " + group + " alive at \"Started\"", without, with,
					(start) -> start.cpuByThreads().getOrDefault(group, 0.0), "%.2f", "");
		}
		row(table, "classes loaded", without, with, (start) -> start.classes(), "%.0f", "");
		row(table, "live threads", without, with, (start) -> start.threads(), "%.0f", "at most +3");
		row(table, "heap used after a full GC (MB)", without, with, Start::heapMb, "%.1f", "");
		row(table, "non-heap used: metaspace + code cache (MB)", without, with, Start::nonHeapMb, "%.1f", "");
		table.append("\nEach start (without | with): start s ")
			.append(each(without, Start::seconds, "%.2f"))
			.append(" | ")
			.append(each(with, Start::seconds, "%.2f"))
			.append("; threads ")
			.append(each(without, (start) -> start.threads(), "%.0f"))
			.append(" | ")
			.append(each(with, (start) -> start.threads(), "%.0f"))
			.append(".\n");
		table.append("Threads only with Holdfast (digits as N): ").append(onlyIn(with, without)).append(".\n");
		table.append("Threads only without Holdfast: ").append(onlyIn(without, with)).append(".\n");
		return table.toString();
	}

	private static void row(StringBuilder table, String label, List<Start> without, List<Start> with,
			ToDoubleFunction<Start> value, String format, String goal) {
		double before = median(without, value);
		double after = median(with, value);
		double added = after - before;
		table.append("| ")
			.append(label)
			.append(" | ")
			.append(String.format(Locale.ROOT, format, before))
			.append(" | ")
			.append(String.format(Locale.ROOT, format, after))
			.append(" | ")
			.append(String.format(Locale.ROOT, "%+" + format.substring(1), added))
			.append((before != 0) ? String.format(Locale.ROOT, " (%+.0f %%)", 100 * added / before) : "")
			.append(" | ")
			.append(goal)
			.append(" |\n");
	}

	private static String each(List<Start> starts, ToDoubleFunction<Start> value, String format) {
		return starts.stream().map((start) -> String.format(Locale.ROOT, format, value.applyAsDouble(start)))
			.collect(Collectors.joining(" "));
	}

	static double median(List<Start> starts, ToDoubleFunction<Start> value) {
		double[] values = starts.stream().mapToDouble(value).sorted().toArray();
		int middle = values.length / 2;
		return (values.length % 2 == 1) ? values[middle] : (values[middle - 1] + values[middle]) / 2;
	}

	/** Thread names (digits as N) in every start of {@code some} and in no start of {@code others}. */
	private static String onlyIn(List<Start> some, List<Start> others) {
		Set<String> names = new TreeSet<>(some.get(0).threadNames());
		some.forEach((start) -> names.retainAll(start.threadNames()));
		others.forEach((start) -> names.removeAll(start.threadNames()));
		return names.isEmpty() ? "none" : names.stream().map((name) -> "`" + name + "`").collect(Collectors.joining(", "));
	}

	private static Set<String> threadNames(String threadDump) {
		Set<String> names = new TreeSet<>(Comparator.naturalOrder());
		Matcher matcher = THREAD_NAME.matcher(threadDump);
		while (matcher.find()) {
			names.add(matcher.group(1).replaceAll("\\d+", "N"));
		}
		return names;
	}

	/** CPU time (user and system) of a process so far, from {@code /proc/<pid>/stat}; NaN if unreadable. */
	private static double cpuSeconds(long pid) {
		try {
			String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
			// Fields after the command name, which is in parentheses: state is the 3rd, utime the 14th.
			String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
			long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
			return ticks / (double) Long.getLong("bench.cpu.hz", 100);
		}
		catch (IOException | RuntimeException ex) {
			return Double.NaN;
		}
	}

	private String jcmd(String pid, String command) throws IOException, InterruptedException {
		Process process = new ProcessBuilder(this.bin.resolve("jcmd").toString(), pid, command).redirectErrorStream(true)
			.start();
		String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
		if (process.waitFor() != 0) {
			fail("jcmd " + pid + " " + command + " failed: " + output);
		}
		return output;
	}

	private static Map<String, String> counters(String output) {
		Map<String, String> counters = new HashMap<>();
		for (String line : output.split("\n")) {
			int equals = line.indexOf('=');
			if (equals > 0) {
				counters.put(line.substring(0, equals).trim(), line.substring(equals + 1).trim());
			}
		}
		return counters;
	}

	private static long number(Map<String, String> counters, String name) {
		String value = counters.get(name);
		if (value == null) {
			fail("The JVM's performance counters have no " + name);
		}
		return Long.parseLong(value);
	}

	private static long kilobytes(Pattern pattern, String output, int group) {
		Matcher matcher = pattern.matcher(output);
		if (!matcher.find()) {
			fail("Unexpected jcmd output, no " + pattern + " in:\n" + output);
		}
		return Long.parseLong(matcher.group(group));
	}

	private static long sum(Pattern pattern, String output, int group) {
		long total = 0;
		Matcher matcher = pattern.matcher(output);
		while (matcher.find()) {
			total += Long.parseLong(matcher.group(group));
		}
		return total;
	}

	private static void checkRedis(String host, int port) {
		try (Socket socket = new Socket()) {
			socket.connect(new InetSocketAddress(host, port), 2000);
			socket.setSoTimeout(2000);
			OutputStream out = socket.getOutputStream();
			out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
			out.flush();
			byte[] reply = new byte[7];
			int read = socket.getInputStream().read(reply);
			if (read < 5 || !new String(reply, 0, read, StandardCharsets.US_ASCII).startsWith("+PONG")) {
				fail("Redis at " + host + ":" + port + " did not answer PING");
			}
		}
		catch (IOException ex) {
			fail("No Redis at " + host + ":" + port + " (" + ex.getMessage() + "): start one (redis-server "
					+ "--daemonize yes) or name another with -Dbench.startup.redis=host:port");
		}
	}

	private static String command() {
		String properties = System.getProperties()
			.stringPropertyNames()
			.stream()
			.filter((name) -> name.startsWith("bench.startup."))
			.sorted()
			.map((name) -> "-D" + name + "=" + System.getProperty(name) + " ")
			.collect(Collectors.joining());
		return "java " + properties + "-cp benchmarks/target/benchmarks.jar " + StartupCost.class.getName();
	}

	private static void deleteTree(Path root) throws IOException {
		if (!Files.exists(root)) {
			return;
		}
		try (Stream<Path> paths = Files.walk(root)) {
			paths.sorted(Comparator.reverseOrder()).forEach((path) -> {
				try {
					Files.delete(path);
				}
				catch (IOException ex) {
					throw new UncheckedIOException(ex);
				}
			});
		}
	}

	private static void fail(String message) {
		System.err.println(message);
		System.exit(2);
	}

	private StartupCost() {
	}

}
