package dev.holdfast.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.LongAdder;

/**
 * JDBC contenders in alternating short rounds in one JVM (as {@link InterleavedRatio}), with the
 * PostgreSQL server's CPU time per operation: before and after each round, the user + system
 * time of the server's processes is read from {@code /proc/<pid>/stat} (the client backends of
 * this database and the server's background processes, as {@code pg_stat_activity} lists them),
 * so each round's difference is the server CPU that contender caused. Needs the server on this
 * machine.
 * <p>
 * Run: {@code java [-Dbench.pg=local] -cp benchmarks/target/benchmarks.jar
 * dev.holdfast.bench.JdbcServerCpu [threads] [rounds] [round-millis] [contenders...]}; defaults 1
 * thread, 20 rounds of 1000 ms, {@code jdbc-floor jdbc-holdfast}.
 */
public final class JdbcServerCpu {

	private static final double TICK_MICROS = 1_000_000.0 / 100; // USER_HZ is 100 on Linux

	private JdbcServerCpu() {
	}

	public static void main(String[] args) throws Exception {
		int threads = (args.length > 0) ? Integer.parseInt(args[0]) : 1;
		int rounds = (args.length > 1) ? Integer.parseInt(args[1]) : 20;
		long roundMillis = (args.length > 2) ? Long.parseLong(args[2]) : 1000;
		List<String> contenders = (args.length > 3) ? Arrays.asList(args).subList(3, args.length)
				: List.of("jdbc-floor", "jdbc-holdfast");
		try (Postgres postgres = Postgres.start(System.getProperty("bench.pg", "embedded"))) {
			System.setProperty("bench.jdbc.url", postgres.url);
			System.setProperty("bench.jdbc.user", postgres.user);
			postgres.createTables();
			run(postgres, threads, rounds, roundMillis, contenders);
		}
	}

	private static void run(Postgres postgres, int threads, int rounds, long roundMillis, List<String> contenders)
			throws Exception {
		Map<String, LockClient> clients = new LinkedHashMap<>();
		Map<String, List<Double>> rates = new LinkedHashMap<>();
		Map<String, long[]> totals = new LinkedHashMap<>(); // ops, server ticks, client CPU ns
		com.sun.management.OperatingSystemMXBean os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
			.getOperatingSystemMXBean();
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		try (Connection probe = DriverManager.getConnection(postgres.url, postgres.user, "")) {
			for (String contender : contenders) {
				clients.put(contender, Clients.create(contender));
				rates.put(contender, new ArrayList<>());
				totals.put(contender, new long[3]);
			}
			List<String> order = new ArrayList<>(contenders);
			for (int round = -3; round < rounds; round++) {
				Collections.rotate(order, 1);
				for (String contender : order) {
					List<Long> pids = serverPids(probe);
					long before = ticks(pids);
					long clientBefore = os.getProcessCpuTime();
					long ops = round(clients.get(contender), contender, threads, roundMillis, pool);
					long after = ticks(pids);
					long client = os.getProcessCpuTime() - clientBefore;
					if (round >= 0) {
						rates.get(contender).add(ops * 1000.0 / roundMillis);
						totals.get(contender)[0] += ops;
						totals.get(contender)[1] += after - before;
						totals.get(contender)[2] += client;
					}
				}
			}
		}
		finally {
			pool.shutdownNow();
			for (LockClient client : clients.values()) {
				client.close();
			}
		}
		List<Double> base = rates.get(contenders.get(0));
		System.out.printf("%s; %d thread(s), %d rounds of %d ms; ratio = contender / %s in the same round%n",
				postgres.description(), threads, rounds, roundMillis, contenders.get(0));
		double baseCpu = cpuPerOp(totals.get(contenders.get(0)));
		for (String contender : contenders) {
			List<Double> ratios = new ArrayList<>();
			for (int i = 0; i < base.size(); i++) {
				ratios.add(rates.get(contender).get(i) / base.get(i));
			}
			List<Double> sorted = new ArrayList<>(rates.get(contender));
			Collections.sort(ratios);
			Collections.sort(sorted);
			double cpu = cpuPerOp(totals.get(contender));
			System.out.printf(
					"%-24s median %,7.0f ops/s | ratio median %.2f×, quartiles %.2f–%.2f× | server CPU %5.1f µs/op (%.2f×)"
							+ " | client CPU %5.1f µs/op%n",
					contender, sorted.get(sorted.size() / 2), ratios.get(ratios.size() / 2),
					ratios.get(ratios.size() / 4), ratios.get(ratios.size() * 3 / 4), cpu, cpu / baseCpu,
					totals.get(contender)[2] / 1000.0 / Math.max(1, totals.get(contender)[0]));
		}
	}

	private static double cpuPerOp(long[] total) {
		return total[1] * TICK_MICROS / Math.max(1, total[0]);
	}

	private static List<Long> serverPids(Connection probe) throws Exception {
		List<Long> pids = new ArrayList<>();
		try (Statement statement = probe.createStatement();
				ResultSet rs = statement.executeQuery("SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()"
						+ " AND (datname = current_database() OR backend_type <> 'client backend')")) {
			while (rs.next()) {
				pids.add(rs.getLong(1));
			}
		}
		return pids;
	}

	private static long ticks(List<Long> pids) {
		long sum = 0;
		for (long pid : pids) {
			try {
				String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
				String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
				sum += Long.parseLong(fields[11]) + Long.parseLong(fields[12]); // utime, stime
			}
			catch (Exception ex) {
				// ended meanwhile
			}
		}
		return sum;
	}

	private static long round(LockClient client, String contender, int threads, long millis, ExecutorService pool)
			throws Exception {
		long end = System.nanoTime() + millis * 1_000_000L;
		LongAdder operations = new LongAdder();
		List<Future<?>> running = new ArrayList<>();
		for (int t = 0; t < threads; t++) {
			String key = "cpu-" + contender + "-" + t;
			running.add(pool.submit(() -> {
				while (System.nanoTime() < end) {
					client.lockUnlock(key);
					operations.increment();
				}
				return null;
			}));
		}
		for (Future<?> thread : running) {
			thread.get();
		}
		return operations.sum();
	}

}
