package dev.holdfast.scheduling;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.springframework.boot.Banner;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

import dev.holdfast.ScheduledTick;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;

/**
 * One instance in its own JVM, for {@link RedisMultiProcessSingleInstanceTests}: a cron job every
 * second on the redis backend that appends {@code start <tick> <pid>}, sleeps 300 ms and appends
 * {@code end <tick> <pid>} to a shared file (small appends to a file opened for appending are
 * atomic). Arguments: redis port, output file, job name.
 */
public final class ScheduledJobProcess {

	private ScheduledJobProcess() {
	}

	public static void main(String[] args) {
		new SpringApplicationBuilder(ProcessConfiguration.class).web(WebApplicationType.NONE)
			.bannerMode(Banner.Mode.OFF)
			.logStartupInfo(false)
			.properties("spring.data.redis.port=" + args[0], "output=" + args[1], "job.name=" + args[2],
					"holdfast.backend=redis", "logging.level.dev.holdfast.scheduling=debug")
			.run();
		append(Path.of(args[1]), "ready " + ProcessHandle.current().pid());
	}

	static void append(Path file, String line) {
		try {
			Files.writeString(file, line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
					StandardOpenOption.APPEND);
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataRedisAutoConfiguration.class, HoldfastAutoConfiguration.class })
	static class ProcessConfiguration {

		@Bean
		Job job(Environment environment) {
			return new Job(Path.of(environment.getRequiredProperty("output")));
		}

	}

	static class Job {

		private final Path output;

		Job(Path output) {
			this.output = output;
		}

		@SingleInstanceScheduled(cron = "* * * * * *", name = "${job.name}", lockAtMostFor = "600ms")
		void run() throws InterruptedException {
			long pid = ProcessHandle.current().pid();
			long tick = ScheduledTick.current().orElseThrow().getEpochSecond();
			append(this.output, "start " + tick + " " + pid);
			Thread.sleep(300);
			append(this.output, "end " + tick + " " + pid);
		}

	}

}
