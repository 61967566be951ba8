package dev.holdfast.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * Where a process's CPU time went, by kind of thread: its live threads' user and system time
 * ({@code /proc/<pid>/task/<tid>/stat}, Linux only), grouped by name. A thread that has ended is
 * not counted (its time is in the process's total only).
 */
final class ThreadCpu {

	/** The groups, in the order reports show them. */
	static final String[] GROUPS = { "main thread", "JIT compiler threads", "GC threads", "holdfast-* threads",
			"lettuce-* threads", "other threads" };

	private ThreadCpu() {
	}

	/** Seconds of CPU per group of {@link #GROUPS}; empty where {@code /proc} cannot be read. */
	static Map<String, Double> of(long pid) {
		Map<String, Double> seconds = new LinkedHashMap<>();
		double hz = Long.getLong("bench.cpu.hz", 100);
		try (Stream<Path> tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
			for (Path task : (Iterable<Path>) tasks::iterator) {
				try {
					String stat = Files.readString(task.resolve("stat"));
					// The name is in parentheses; utime and stime are the 12th and 13th fields after it.
					String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
					String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
					double cpu = (Long.parseLong(fields[11]) + Long.parseLong(fields[12])) / hz;
					seconds.merge(group(name), cpu, Double::sum);
				}
				catch (IOException | RuntimeException ex) {
					// The thread ended while being read.
				}
			}
		}
		catch (IOException ex) {
			return Map.of();
		}
		return seconds;
	}

	/**
	 * The group of a thread named {@code name} (Linux keeps its first 15 characters). The JVM runs
	 * {@code main} on a thread of the launcher's name, {@code java}, beside the launcher's own
	 * thread, which waits.
	 */
	static String group(String name) {
		if (name.equals("java")) {
			return GROUPS[0];
		}
		if (name.matches("C\\d CompilerThre.*")) {
			return GROUPS[1];
		}
		if (name.startsWith("GC Thread") || name.matches("G1 .*") || name.matches("G\\d Conc.*")
				|| name.startsWith("VM Thread")) {
			return GROUPS[2];
		}
		if (name.startsWith("holdfast-")) {
			return GROUPS[3];
		}
		return name.startsWith("lettuce-") ? GROUPS[4] : GROUPS[5];
	}

}
