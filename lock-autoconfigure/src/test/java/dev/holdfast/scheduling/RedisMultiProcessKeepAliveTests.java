package dev.holdfast.scheduling;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

/**
 * Issue 32's measurement: two JVMs run a job of 60 s with a fixed delay of 1 s on one real
 * redis-server, its lock a lease of 3 s renewed while the run lasts. The instance running it is
 * killed with SIGKILL, and the other must start the job within the lease time plus 2 s. Three
 * rounds, a fresh JVM taking the killed one's place each time; the takeover times are printed
 * ({@code takeover after SIGKILL}). Before the job lock was renewed, it was taken for
 * lockAtMostFor (here 5 min) and the job ran nowhere until then.
 */
class RedisMultiProcessKeepAliveTests {

	private static final Duration LEASE_TIME = Duration.ofSeconds(3);

	private static final int ROUNDS = 3;

	@TempDir
	Path dir;

	private final Map<Long, Process> processes = new HashMap<>();

	private RedisServer redis;

	@AfterEach
	void stop() {
		this.processes.values().forEach(Process::destroyForcibly);
		if (this.redis != null) {
			this.redis.close();
		}
	}

	@Test
	void whenTheInstanceRunningALongJobIsKilledAnotherStartsItWithinTheLeaseTimePlusTwoSeconds() throws Exception {
		this.redis = RedisServer.start();
		Path output = this.dir.resolve("runs.txt");
		Files.createFile(output);
		String job = "keep-alive-job-" + UUID.randomUUID();
		spawn(output, job);
		spawn(output, job);
		awaitReady(output, 2);
		List<Long> takeovers = new ArrayList<>();
		String[] holder = awaitStart(output, 0, Duration.ofSeconds(30));
		for (int round = 1; round <= ROUNDS; round++) {
			long startedAt = Long.parseLong(holder[1]);
			long holderPid = Long.parseLong(holder[2]);
			// The run outlives its lease time twice over, renewed: nobody else starts the job.
			long keptUntil = startedAt + 2 * LEASE_TIME.toMillis() + 1000;
			await().atMost(Duration.ofSeconds(30)).until(() -> System.currentTimeMillis() >= keptUntil);
			assertThat(starts(output)).as("runs started while the first run of round %s lasted", round)
				.hasSize(round);
			Process killed = this.processes.remove(holderPid);
			long killedAt = System.currentTimeMillis();
			killed.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
			String[] next = awaitStart(output, round, LEASE_TIME.plusSeconds(30));
			long takeover = Long.parseLong(next[1]) - killedAt;
			takeovers.add(takeover);
			System.out.println("takeover after SIGKILL, round " + round + ": " + takeover + " ms (lease time "
					+ LEASE_TIME.toMillis() + " ms, bound " + LEASE_TIME.plusSeconds(2).toMillis() + " ms)");
			assertThat(Long.parseLong(next[2])).as("the instance that took over").isNotEqualTo(holderPid);
			holder = next;
			if (round < ROUNDS) {
				spawn(output, job);
				awaitReady(output, round + 2);
			}
		}
		System.out.println("takeovers after SIGKILL, ms: " + takeovers);
		assertThat(takeovers).as("time from SIGKILL to the job's start on the other instance, ms")
			.allSatisfy((ms) -> assertThat(ms).isLessThanOrEqualTo(LEASE_TIME.plusSeconds(2).toMillis()));
	}

	private void spawn(Path output, String job) throws IOException {
		String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
		List<String> command = List.of(java, "-Xmx160m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp",
				System.getProperty("java.class.path"), KeepAliveJobProcess.class.getName(),
				Integer.toString(this.redis.port()), output.toString(), job, LEASE_TIME.toMillis() + "ms");
		Path log = this.dir.resolve("process-" + this.processes.size() + "-" + System.nanoTime() + ".log");
		Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
		this.processes.put(process.pid(), process);
	}

	private void awaitReady(Path output, int count) {
		await().atMost(Duration.ofSeconds(90)).alias("job processes ready; see the logs in " + this.dir).until(() -> {
			for (Process process : this.processes.values()) {
				if (!process.isAlive()) {
					fail("A job process exited; see the logs in " + this.dir);
				}
			}
			return lines(output, "ready ").size() == count;
		});
	}

	/** The start line after {@code seen} starts: {@code start <epoch millis> <pid>}, split. */
	private String[] awaitStart(Path output, int seen, Duration timeout) {
		List<String> started = await().atMost(timeout)
			.pollInterval(Duration.ofMillis(20))
			.alias("run " + (seen + 1) + " of the job; see the logs in " + this.dir)
			.until(() -> starts(output), (lines) -> lines.size() > seen);
		return started.get(seen).split(" ");
	}

	private static List<String> starts(Path output) throws IOException {
		return lines(output, "start ");
	}

	private static List<String> lines(Path output, String prefix) throws IOException {
		return Files.readAllLines(output).stream().filter((line) -> line.startsWith(prefix)).toList();
	}

}
