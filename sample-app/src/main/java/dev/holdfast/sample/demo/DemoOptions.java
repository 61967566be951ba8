package dev.holdfast.sample.demo;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import dev.holdfast.sample.SampleApplication;

/**
 * The demo's command line: {@code --name=value} options, each checked with a clear message.
 *
 * @param instances how many application instances to start
 * @param requests how many reservation requests to send, spread over all instances
 * @param concurrency how many requests are in flight at once
 * @param stock units in stock per SKU at the start
 * @param skus the SKUs to reserve
 * @param ticks how many ticks of the scheduled job to observe with all instances up
 * @param profile the Spring profile of the instances ({@code redis}, {@code redlock},
 * {@code postgres}), or {@code null} for the embedded default (H2 file database)
 * @param backend a {@code holdfast.backend} override, or {@code null} for the profile's
 * @param workDir where the demo keeps its database and the instances' logs
 * @param startupTimeout how long an instance may take to become ready
 */
public record DemoOptions(int instances, int requests, int concurrency, int stock, List<String> skus, int ticks,
		String profile, String backend, Path workDir, Duration startupTimeout) {

	/** The profiles the sample application defines. */
	static final List<String> PROFILES = List.copyOf(SampleApplication.PROFILE_BACKENDS.keySet());

	static final List<String> BACKENDS = List.of("jdbc", "redis", "redlock", "zookeeper", "memory");

	static final String USAGE = """
			Usage: Demo [--instances=3] [--requests=600] [--concurrency=12] [--stock=250] [--skus=apple,pear]
			            [--ticks=5] [--profile=redis|redlock|zookeeper|postgres]
			            [--backend=jdbc|redis|redlock|zookeeper|memory]
			            [--work-dir=target/holdfast-demo] [--startup-timeout=180s]
			Starts the instances of the sample application as separate JVMs sharing one database, sends
			concurrent reservations to all of them, watches the single-instance job for some ticks and
			checks the guarantees: nothing oversold, one run per tick. Exits 0 when they held, 1 when one
			failed, 2 on bad options or when an instance did not start.""";

	/**
	 * Parses {@code args}.
	 * @throws IllegalArgumentException naming the bad option and what is allowed
	 */
	public static DemoOptions parse(String... args) {
		int instances = 3;
		int requests = 600;
		int concurrency = 12;
		int stock = 250;
		List<String> skus = List.of("apple", "pear");
		int ticks = 5;
		String profile = null;
		String backend = null;
		Path workDir = Path.of("target", "holdfast-demo");
		Duration startupTimeout = Duration.ofSeconds(180);
		for (String arg : args) {
			if (!arg.startsWith("--") || !arg.contains("=")) {
				throw new IllegalArgumentException("Unexpected argument '" + arg + "': options look like --name=value");
			}
			String name = arg.substring(2, arg.indexOf('='));
			String value = arg.substring(arg.indexOf('=') + 1).trim();
			switch (name) {
				case "instances" -> instances = number(name, value, 1, 9);
				case "requests" -> requests = number(name, value, 1, 1_000_000);
				case "concurrency" -> concurrency = number(name, value, 1, 256);
				case "stock" -> stock = number(name, value, 0, 1_000_000);
				case "ticks" -> ticks = number(name, value, 1, 100);
				case "skus" -> skus = skus(value);
				case "profile" -> profile = oneOf(name, value, PROFILES);
				case "backend" -> backend = oneOf(name, value, BACKENDS);
				case "work-dir" -> workDir = Path.of(value);
				case "startup-timeout" -> startupTimeout = duration(name, value);
				case "spring.profiles.active" -> throw new IllegalArgumentException("The demo takes its profile as "
						+ "--profile=" + value + " (with Maven: -Dspring-boot.run.arguments=--profile=" + value
						+ "), not as a Spring profile (-Dspring-boot.run.profiles)");
				default -> throw new IllegalArgumentException("Unknown option --" + name);
			}
		}
		return new DemoOptions(instances, requests, concurrency, stock, skus, ticks, profile, backend, workDir,
				startupTimeout);
	}

	private static int number(String name, String value, int min, int max) {
		try {
			int result = Integer.parseInt(value);
			if (result >= min && result <= max) {
				return result;
			}
		}
		catch (NumberFormatException ex) {
			// reported below
		}
		throw new IllegalArgumentException(
				"--" + name + " must be a whole number from " + min + " to " + max + ", was '" + value + "'");
	}

	private static String oneOf(String name, String value, List<String> allowed) {
		String result = value.toLowerCase(Locale.ROOT);
		if (!allowed.contains(result)) {
			throw new IllegalArgumentException("--" + name + " must be one of " + allowed + ", was '" + value + "'");
		}
		return result;
	}

	private static List<String> skus(String value) {
		List<String> result = new ArrayList<>();
		for (String sku : value.split(",")) {
			String trimmed = sku.trim();
			if (!trimmed.matches("[A-Za-z0-9_-]{1,32}")) {
				throw new IllegalArgumentException("--skus must be a comma-separated list of names made of letters, "
						+ "digits, '-' and '_' (at most 32 each), was '" + value + "'");
			}
			if (!result.contains(trimmed)) {
				result.add(trimmed);
			}
		}
		return List.copyOf(result);
	}

	private static Duration duration(String name, String value) {
		try {
			String text = value.toLowerCase(Locale.ROOT);
			Duration result = text.endsWith("s") ? Duration.ofSeconds(Long.parseLong(text.substring(0, text.length() - 1)))
					: Duration.ofSeconds(Long.parseLong(text));
			if (!result.isNegative() && !result.isZero()) {
				return result;
			}
		}
		catch (NumberFormatException ex) {
			// reported below
		}
		throw new IllegalArgumentException("--" + name + " must be a number of seconds such as 180s, was '" + value
				+ "'");
	}

	/**
	 * The lock backend the instances must report: the {@code --backend} override, else the one
	 * the profile puts the locks in, else {@code jdbc} (the embedded H2 database).
	 */
	String expectedBackend() {
		if (this.backend != null) {
			return this.backend;
		}
		return (this.profile != null) ? SampleApplication.PROFILE_BACKENDS.get(this.profile) : "jdbc";
	}

	/**
	 * Whether the instances keep their data in a database the demo creates afresh (the embedded
	 * H2 default) rather than in a server that keeps earlier runs' rows.
	 */
	boolean freshDatabase() {
		return !"postgres".equals(this.profile);
	}

}
