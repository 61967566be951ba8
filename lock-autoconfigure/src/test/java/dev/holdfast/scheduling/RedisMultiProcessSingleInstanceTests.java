package dev.holdfast.scheduling;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.assertj.core.api.Assertions.fail;

/**
 * Three JVMs run the same cron job on one real redis-server; the one running a tick is killed
 * with SIGKILL, and the next tick runs on another.
 */
class RedisMultiProcessSingleInstanceTests {

	@TempDir
	Path dir;

	private final List<Process> processes = new ArrayList<>();

	private RedisServer redis;

	@AfterEach
	void stop() {
		this.processes.forEach(Process::destroyForcibly);
		if (this.redis != null) {
			this.redis.close();
		}
	}

	@Test
	void eachTickRunsOnceAcrossProcessesAndAKilledHolderIsReplacedAtTheNextTick() throws Exception {
		this.redis = RedisServer.start();
		Path output = this.dir.resolve("runs.txt");
		Files.createFile(output);
		String job = "process-job-" + UUID.randomUUID();
		Map<Long, Process> byPid = new HashMap<>();
		for (int i = 0; i < 3; i++) {
			Process process = spawn(output, job, this.dir.resolve("process-" + i + ".log"));
			this.processes.add(process);
			byPid.put(process.pid(), process);
		}
		awaitReady(output, Duration.ofSeconds(90));
		long warmFrom = java.time.Instant.now().getEpochSecond() + 1;
		await().atMost(Duration.ofSeconds(30)).until(() -> startedTicks(output, warmFrom) >= 3);
		// kill the process that is running a tick, while it runs
		String running = await().atMost(Duration.ofSeconds(10))
			.pollInterval(Duration.ofMillis(5))
			.alias("a process caught running a tick")
			.until(() -> lastLine(output), (line) -> line.startsWith("start "));
		String[] caught = running.split(" ");
		long killedTick = Long.parseLong(caught[1]);
		long killedPid = Long.parseLong(caught[2]);
		byPid.get(killedPid).destroyForcibly().waitFor(10, TimeUnit.SECONDS);
		await().atMost(Duration.ofSeconds(30)).until(() -> startedTicks(output, killedTick + 1) >= 4);
		this.processes.forEach(Process::destroyForcibly);
		Map<Long, List<Long>> starts = new TreeMap<>();
		Set<String> ends = new HashSet<>();
		for (String line : Files.readAllLines(output)) {
			String[] parts = line.split(" ");
			if (parts[0].equals("start")) {
				starts.computeIfAbsent(Long.parseLong(parts[1]), (tick) -> new ArrayList<>()).add(Long.parseLong(parts[2]));
			}
			else if (parts[0].equals("end")) {
				ends.add(parts[1] + " " + parts[2]);
			}
		}
		Map<Long, List<Long>> duplicates = new LinkedHashMap<>();
		starts.forEach((tick, pids) -> {
			if (pids.size() > 1) {
				duplicates.put(tick, pids);
			}
		});
		assertThat(duplicates).as("ticks started more than once, of %s", starts).isEmpty();
		List<Long> ticks = new ArrayList<>(starts.keySet());
		ticks.removeIf((tick) -> tick < warmFrom);
		// Separate JVMs on a loaded machine can all stall past a tick: require most ticks here;
		// the in-JVM cluster tests require every tick.
		long window = ticks.get(ticks.size() - 1) - ticks.get(0) + 1;
		assertThat(ticks.size()).as("ticks that ran since all processes were ready: %s; %s", starts, skipLog())
			.isGreaterThanOrEqualTo((int) (window * 0.7))
			.isGreaterThanOrEqualTo(6);
		assertThat(ends).as("the killed run never ended").doesNotContain(killedTick + " " + killedPid);
		long killed = killedTick;
		Long next = starts.keySet().stream().filter((tick) -> tick > killed).findFirst().orElse(null);
		assertThat(next).as("the first tick after the killed one, of %s", starts).isNotNull();
		assertThat(next).as("the first tick after the killed one %s, of %s", killed, starts)
			.isLessThanOrEqualTo(killedTick + 2);
		assertThat(starts.get(next)).singleElement().isNotEqualTo(killedPid);
	}

	private String skipLog() throws IOException {
		StringBuilder out = new StringBuilder();
		for (int i = 0; i < 3; i++) {
			for (String line : Files.readAllLines(this.dir.resolve("process-" + i + ".log"))) {
				if (line.contains("Holdfast skipped")) {
					out.append("process ").append(i).append(": ").append(line).append('\n');
				}
			}
		}
		return out.toString();
	}

	private Process spawn(Path output, String job, Path log) throws IOException {
		String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
		List<String> command = List.of(java, "-Xmx160m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
				System.getProperty("java.class.path"), ScheduledJobProcess.class.getName(),
				Integer.toString(this.redis.port()), output.toString(), job);
		return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
	}

	private void awaitReady(Path output, Duration timeout) {
		await().atMost(timeout).alias("all job processes ready; see the logs in " + this.dir).until(() -> {
			for (Process process : this.processes) {
				if (!process.isAlive()) {
					fail("A job process exited at startup; see the logs in " + this.dir);
				}
			}
			return Files.readAllLines(output).stream().filter((line) -> line.startsWith("ready ")).count() == this.processes
				.size();
		});
	}

	/** How many distinct ticks, from {@code from} (epoch seconds) on, were started. */
	private static long startedTicks(Path output, long from) throws IOException {
		return Files.readAllLines(output)
			.stream()
			.filter((line) -> line.startsWith("start "))
			.mapToLong((line) -> Long.parseLong(line.split(" ")[1]))
			.filter((tick) -> tick >= from)
			.distinct()
			.count();
	}

	private static String lastLine(Path output) throws IOException {
		List<String> lines = Files.readAllLines(output);
		return lines.isEmpty() ? "" : lines.get(lines.size() - 1);
	}

}
