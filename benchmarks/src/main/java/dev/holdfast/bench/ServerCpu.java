package dev.holdfast.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * CPU time the servers behind a contender spent, read from {@code /proc/<pid>/stat} (user + system
 * time, in clock ticks of 10 ms): sampled before and after a measurement and divided by its
 * operations, it gives the server's CPU per operation, which the machine's load does not inflate
 * the way it inflates latency.
 * <p>
 * {@link Main} names the processes in system properties, which the JMH forks inherit:
 * {@code bench.cpu.redis} (the redis-server), {@code bench.cpu.redlock} (the five Redlock
 * servers), {@code bench.cpu.pg} (the postmaster: it and all its children, the backends and
 * background workers, plus what its exited children spent) and {@code bench.cpu.zookeeper} (the
 * runner's JVM, where the ZooKeeper server runs: only the server's threads count).
 */
final class ServerCpu {

	/** {@code sysconf(_SC_CLK_TCK)}: 100 on Linux unless the kernel was built otherwise. */
	private static final long NANOS_PER_TICK = 1_000_000_000L / Long.getLong("bench.cpu.hz", 100);

	/** Thread names (as the kernel keeps them: the first 15 characters) of a ZooKeeper 3.9 server. */
	private static final List<String> ZOOKEEPER_THREADS = List.of("SyncThread", "ProcessThread", "CommitProc",
			"NIOServerCxnFa", "NIOWorkerThread", "SessionTracker", "RequestThrottle", "ContainerManage",
			"ConnnectionExpi", "zkservermainrun");

	private ServerCpu() {
	}

	/**
	 * CPU nanoseconds the servers of {@code contender} used so far, or -1 if they are not known or
	 * not readable (no {@code /proc}).
	 */
	static long nanos(String contender) {
		try {
			if (contender.startsWith("redlock")) {
				return sum(pids("bench.cpu.redlock"));
			}
			if (contender.startsWith("redis")) {
				return sum(pids("bench.cpu.redis"));
			}
			if (contender.startsWith("jdbc")) {
				List<Long> postmaster = pids("bench.cpu.pg");
				return postmaster.isEmpty() ? -1 : postgres(postmaster.get(0));
			}
			if (contender.startsWith("zookeeper")) {
				List<Long> jvm = pids("bench.cpu.zookeeper");
				return jvm.isEmpty() ? -1 : zooKeeperThreads(jvm.get(0));
			}
		}
		catch (IOException | RuntimeException ex) {
			return -1;
		}
		return -1;
	}

	/** CPU nanoseconds this JVM (all its threads: the clients, GC, JIT) used so far. */
	static long processNanos() {
		java.lang.management.OperatingSystemMXBean os = ManagementFactory.getOperatingSystemMXBean();
		if (os instanceof com.sun.management.OperatingSystemMXBean bean) {
			return bean.getProcessCpuTime();
		}
		return -1;
	}

	/** The ZooKeeper server's CPU in this JVM, to subtract from {@link #processNanos()}; 0 if none runs here. */
	static long zooKeeperInThisJvm(String contender) {
		if (!contender.startsWith("zookeeper")
				|| !Long.toString(ProcessHandle.current().pid()).equals(System.getProperty("bench.cpu.zookeeper"))) {
			return 0;
		}
		try {
			return zooKeeperThreads(ProcessHandle.current().pid());
		}
		catch (IOException | RuntimeException ex) {
			return 0;
		}
	}

	/** Microseconds per operation between two samples, or NaN if either is unknown. */
	static double microsPerOp(long before, long after, long operations) {
		if (before < 0 || after < 0 || operations <= 0) {
			return Double.NaN;
		}
		return (after - before) / 1000.0 / operations;
	}

	private static List<Long> pids(String property) {
		List<Long> pids = new ArrayList<>();
		for (String pid : System.getProperty(property, "").split(",")) {
			if (!pid.isBlank()) {
				pids.add(Long.parseLong(pid.trim()));
			}
		}
		return pids;
	}

	private static long sum(List<Long> pids) throws IOException {
		if (pids.isEmpty()) {
			return -1;
		}
		long total = 0;
		for (long pid : pids) {
			total += fields(Path.of("/proc", Long.toString(pid), "stat"), false);
		}
		return total;
	}

	/**
	 * The postmaster's own time and that of its children that exited (the kernel adds a child's
	 * time to the parent's once it is reaped), plus the time of the children present now, zombies
	 * included. A child reaped between reading the children and reading the postmaster would count
	 * twice or not at all: the children are listed before and after, and the read is repeated
	 * until both lists agree.
	 */
	private static long postgres(long postmaster) throws IOException {
		Map<Long, Long> before = children(postmaster);
		for (int attempt = 0;; attempt++) {
			long own = fields(Path.of("/proc", Long.toString(postmaster), "stat"), true);
			Map<Long, Long> after = children(postmaster);
			if (after.keySet().equals(before.keySet()) || attempt == 10) {
				return own + after.values().stream().mapToLong(Long::longValue).sum();
			}
			before = after;
		}
	}

	/** CPU nanoseconds by process id of every process whose parent is {@code parent}, from /proc. */
	private static Map<Long, Long> children(long parent) throws IOException {
		Map<Long, Long> children = new HashMap<>();
		try (DirectoryStream<Path> processes = Files.newDirectoryStream(Path.of("/proc"), "[0-9]*")) {
			for (Path process : processes) {
				try {
					String stat = Files.readString(process.resolve("stat"));
					String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
					if (Long.parseLong(fields[1]) == parent) {
						children.put(Long.parseLong(process.getFileName().toString()), ticks(stat, false) * NANOS_PER_TICK);
					}
				}
				catch (IOException ex) {
					// exited since it was listed
				}
			}
		}
		return children;
	}

	private static long zooKeeperThreads(long pid) throws IOException {
		long total = 0;
		try (DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc", Long.toString(pid), "task"))) {
			for (Path task : tasks) {
				try {
					String stat = Files.readString(task.resolve("stat"));
					String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
					if (ZOOKEEPER_THREADS.stream().anyMatch(name::startsWith)) {
						total += ticks(stat, false);
					}
				}
				catch (IOException ex) {
					// the thread ended
				}
			}
		}
		return total * NANOS_PER_TICK;
	}

	private static long fields(Path stat, boolean withChildren) throws IOException {
		return ticks(Files.readString(stat), withChildren) * NANOS_PER_TICK;
	}

	/** utime + stime (fields 14 and 15 of proc(5)), with cutime + cstime (16, 17) if asked. */
	private static long ticks(String stat, boolean withChildren) {
		String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
		long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
		if (withChildren) {
			ticks += Long.parseLong(fields[13]) + Long.parseLong(fields[14]);
		}
		return ticks;
	}

}
