package dev.holdfast.scheduling;

import java.nio.file.Path;

import org.springframework.boot.Banner;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;

/**
 * One instance in its own JVM, for {@link RedisMultiProcessKeepAliveTests}: a job of 60 s with a
 * fixed delay of 1 s on the redis backend, its lock a lease of {@code holdfast.lease-time}; each
 * run appends {@code start <epoch millis> <pid>} to a shared file, and {@code end ...} if it
 * ends. Arguments: redis port, output file, job name, lease time.
 */
public final class KeepAliveJobProcess {

	private KeepAliveJobProcess() {
	}

	public static void main(String[] args) {
		new SpringApplicationBuilder(ProcessConfiguration.class).web(WebApplicationType.NONE)
			.bannerMode(Banner.Mode.OFF)
			.logStartupInfo(false)
			.properties("spring.data.redis.port=" + args[0], "output=" + args[1], "job.name=" + args[2],
					"holdfast.lease-time=" + args[3], "holdfast.backend=redis")
			.run();
		ScheduledJobProcess.append(Path.of(args[1]), "ready " + ProcessHandle.current().pid());
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

		@SingleInstanceScheduled(fixedDelay = "1s", name = "${job.name}", lockAtMostFor = "5m")
		void run() throws InterruptedException {
			long pid = ProcessHandle.current().pid();
			ScheduledJobProcess.append(this.output, "start " + System.currentTimeMillis() + " " + pid);
			Thread.sleep(60_000);
			ScheduledJobProcess.append(this.output, "end " + System.currentTimeMillis() + " " + pid);
		}

	}

}
