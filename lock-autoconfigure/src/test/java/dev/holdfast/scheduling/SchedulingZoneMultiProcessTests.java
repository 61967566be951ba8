package dev.holdfast.scheduling;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two instances in JVMs whose default time zones differ (UTC and Europe/Berlin) schedule the same
 * daily cron job without a zone: the default zone is per JVM, so only separate processes show
 * what each instance makes of it.
 */
class SchedulingZoneMultiProcessTests {

	@TempDir
	Path dir;

	private final List<Process> processes = new ArrayList<>();

	@AfterEach
	void stop() {
		this.processes.forEach(Process::destroyForcibly);
	}

	@Test
	void withoutAZoneTheInstanceWhoseDefaultZoneIsNotUtcRefusesToStartAndTheOtherRunsInUtc() throws Exception {
		List<String> lines = run("-");
		assertThat(lines).hasSize(2);
		assertThat(lines).anySatisfy((line) -> assertThat(line).startsWith("next UTC ")
			.endsWith(" " + nextAt("UTC")));
		assertThat(lines).anySatisfy((line) -> assertThat(line).startsWith("failed Europe/Berlin ")
			.contains("Nightly.run has a cron expression without a time zone, and this JVM's default time zone is "
					+ "Europe/Berlin")
			.contains("holdfast.scheduling.zone"));
	}

	@Test
	void withHoldfastSchedulingZoneBothInstancesComputeTheSameTicks() throws Exception {
		List<String> lines = run("Asia/Kolkata");
		assertThat(lines).containsExactlyInAnyOrder("next UTC " + nextAt("Asia/Kolkata"),
				"next Europe/Berlin " + nextAt("Asia/Kolkata"));
	}

	/** Epoch ms of the next 02:30 in {@code zone}, as the processes compute it now. */
	private static long nextAt(String zone) {
		ZonedDateTime now = ZonedDateTime.now(ZoneId.of(zone));
		ZonedDateTime next = now.withHour(2).withMinute(30).withSecond(0).withNano(0);
		if (!next.isAfter(now)) {
			next = next.plusDays(1);
		}
		return next.toInstant().toEpochMilli();
	}

	private List<String> run(String zone) throws IOException, InterruptedException {
		Path output = this.dir.resolve("out-" + System.nanoTime() + ".txt");
		for (String jvmZone : List.of("UTC", "Europe/Berlin")) {
			this.processes.add(spawn(jvmZone, output, zone));
		}
		for (Process process : this.processes) {
			assertThat(process.waitFor(120, TimeUnit.SECONDS)).as("the process ended; logs in %s", this.dir).isTrue();
		}
		this.processes.clear();
		return Files.readAllLines(output);
	}

	private Process spawn(String jvmZone, Path output, String zone) throws IOException {
		String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
		List<String> command = List.of(java, "-Duser.timezone=" + jvmZone, "-Xmx128m", "-XX:TieredStopAtLevel=1",
				"-XX:+UseSerialGC", "-cp", System.getProperty("java.class.path"), ZoneProcess.class.getName(),
				output.toString(), zone);
		Path log = this.dir.resolve(jvmZone.replace('/', '-') + "-" + System.nanoTime() + ".log");
		return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
	}

}
