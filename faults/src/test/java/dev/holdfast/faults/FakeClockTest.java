package dev.holdfast.faults;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.locks.LockSupport;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A JVM started on a {@link FakeClock} sees its wall clock jump when the controller jumps it, in
 * both directions, while its {@link System#nanoTime()} stays the controller's and its timed waits
 * keep their length.
 */
@Tag("smoke")
class FakeClockTest {

	@TempDir
	Path dir;

	@Test
	@Timeout(60)
	void wallClockJumpsAndNanoTimeStaysTheHostsClock() throws Exception {
		assumeTrue(FakeClock.unavailable().isEmpty(), () -> FakeClock.unavailable().orElseThrow());
		FakeClock clock = FakeClock.create(this.dir);
		ProcessBuilder builder = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
				"-Xmx32m", "-XX:TieredStopAtLevel=1", "-cp", System.getProperty("java.class.path"),
				ClockProbe.class.getName());
		builder.environment().putAll(clock.environment());
		Process probe = builder.redirectError(ProcessBuilder.Redirect.INHERIT).start();
		Processes.register(probe);
		FakeClock.watch(probe);
		try (PrintWriter ask = new PrintWriter(probe.getOutputStream(), true, StandardCharsets.US_ASCII);
				BufferedReader answers = new BufferedReader(
						new InputStreamReader(probe.getInputStream(), StandardCharsets.US_ASCII))) {
			assertProbeSees(Duration.ZERO, ask, answers);
			clock.jump(Duration.ofHours(1));
			assertProbeSees(Duration.ofHours(1), ask, answers);
			clock.jump(Duration.ofHours(-2));
			assertProbeSees(Duration.ofHours(-1), ask, answers);
			clock.jump(Duration.ofMillis(1250));
			assertProbeSees(Duration.ofMinutes(-60).plusMillis(1250), ask, answers);
			assertThat(clock.offset()).isEqualTo(Duration.ofHours(-1).plusMillis(1250));
		}
		finally {
			probe.destroyForcibly().waitFor();
		}
	}

	private static void assertProbeSees(Duration offset, PrintWriter ask, BufferedReader answers) throws Exception {
		long wallBefore = System.currentTimeMillis();
		long nanoBefore = System.nanoTime();
		ask.println();
		List<Long> answer = List.of(answers.readLine().split(" ")).stream().map(Long::valueOf).toList();
		long nanoAfter = System.nanoTime();
		long wallAfter = System.currentTimeMillis();
		assertThat(answer.get(0)).as("probe's System.nanoTime() is the host's").isBetween(nanoBefore, nanoAfter);
		assertThat(answer.get(1) - offset.toMillis()).as("probe's System.currentTimeMillis() minus " + offset)
			.isBetween(wallBefore - 1, wallAfter + 1);
		assertThat(answer.get(2) - offset.toMillis()).as("probe's Instant.now() minus " + offset)
			.isBetween(wallBefore - 1, wallAfter + 1);
		assertThat(answer.get(3)).as("probe's LockSupport.parkNanos(100 ms), in ms").isBetween(100L, 2000L);
		assertThat(answer.get(4)).as("probe's Object.wait(100), in ms").isBetween(100L, 2000L);
	}

	/**
	 * Answers each line on stdin with {@code nanoTime currentTimeMillis Instant.now()-millis}
	 * and how long, in ms of {@code nanoTime}, a 100 ms park and a 100 ms {@code Object.wait}
	 * took.
	 */
	static final class ClockProbe {

		public static void main(String[] args) throws Exception {
			BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
			Object monitor = new Object();
			while (in.readLine() != null) {
				String clocks = System.nanoTime() + " " + System.currentTimeMillis() + " "
						+ Instant.now().toEpochMilli();
				long start = System.nanoTime();
				LockSupport.parkNanos(Duration.ofMillis(100).toNanos());
				long parked = System.nanoTime() - start;
				start = System.nanoTime();
				synchronized (monitor) {
					monitor.wait(100);
				}
				long waited = System.nanoTime() - start;
				System.out.println(clocks + " " + parked / 1_000_000 + " " + waited / 1_000_000);
				System.out.flush();
			}
		}

	}

}
