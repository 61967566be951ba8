package dev.holdfast.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * Where a table comes from: the command that started this run and the machine's load average
 * (from {@code /proc/loadavg}) when each measured section started and ended. On a 2-core machine
 * that other jobs load, a ratio means little without the load it was measured under.
 */
final class Provenance {

	/** Load average at the start and at the end of a section, as {@code /proc/loadavg} gives it (1, 5, 15 min). */
	record Window(String startLoad, String endLoad) {
	}

	private final Map<String, String> started = new LinkedHashMap<>();

	private final Map<String, Window> windows = new LinkedHashMap<>();

	void start(String section) {
		this.started.put(section, loadAverage());
	}

	void end(String section) {
		String start = this.started.remove(section);
		this.windows.put(section, new Window((start != null) ? start : "?", loadAverage()));
	}

	Window window(String section) {
		return this.windows.get(section);
	}

	/** {@code 1.23 0.98 0.50}: the 1, 5 and 15 minute load averages, or {@code ?} where unreadable. */
	static String loadAverage() {
		try {
			String[] fields = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
			return fields[0] + " " + fields[1] + " " + fields[2];
		}
		catch (IOException | RuntimeException ex) {
			return "?";
		}
	}

	/**
	 * The command that started this JVM, as the user can run it again: {@code java}, the system
	 * properties given, then {@code -jar ...} or the class; classpath and agent arguments of an IDE
	 * are left out.
	 */
	static String command() {
		List<String> arguments = ProcessHandle.current().info().arguments().map(List::of).orElse(List.of());
		if (arguments.isEmpty()) {
			Map<String, String> properties = new TreeMap<>();
			System.getProperties().forEach((key, value) -> {
				if (key.toString().startsWith("bench.") && !isInternal(key.toString())) {
					properties.put(key.toString(), value.toString());
				}
			});
			return "java " + properties.entrySet()
				.stream()
				.map((entry) -> "-D" + entry.getKey() + "=" + entry.getValue() + " ")
				.collect(Collectors.joining()) + "-jar benchmarks/target/benchmarks.jar";
		}
		StringBuilder command = new StringBuilder("java");
		for (String argument : arguments) {
			if (argument.startsWith("-javaagent") || argument.startsWith("-agentlib")) {
				continue;
			}
			command.append(' ').append(argument);
		}
		return command.toString();
	}

	/** Properties that {@link Main} sets itself for the clients (server ports, URLs). */
	private static boolean isInternal(String key) {
		return key.equals("bench.redis.port") || key.equals("bench.redlock.ports") || key.equals("bench.zookeeper.connect")
				|| key.equals("bench.jdbc.url") || key.equals("bench.jdbc.user") || key.startsWith("bench.cpu.");
	}

}
