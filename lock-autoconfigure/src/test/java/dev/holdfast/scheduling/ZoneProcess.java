package dev.holdfast.scheduling;

import java.nio.file.Path;
import java.time.Instant;
import java.util.TimeZone;

import org.springframework.boot.Banner;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.config.ScheduledTask;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;

/**
 * One instance in its own JVM (whose default zone is {@code -Duser.timezone}), for
 * {@link SchedulingZoneMultiProcessTests}: schedules a daily cron job without a zone, then appends
 * {@code next <default zone> <epoch ms of the next tick>} to the output file, or
 * {@code failed <default zone> <message>} if the application does not start, and exits.
 * Arguments: output file, {@code holdfast.scheduling.zone} or {@code -}.
 */
public final class ZoneProcess {

	private ZoneProcess() {
	}

	public static void main(String[] args) {
		Path output = Path.of(args[0]);
		String zone = TimeZone.getDefault().getID();
		SpringApplicationBuilder builder = new SpringApplicationBuilder(ProcessConfiguration.class)
			.web(WebApplicationType.NONE)
			.bannerMode(Banner.Mode.OFF)
			.logStartupInfo(false)
			.properties("holdfast.backend=memory");
		if (!args[1].equals("-")) {
			builder.properties("holdfast.scheduling.zone=" + args[1]);
		}
		try (ConfigurableApplicationContext context = builder.run()) {
			Instant next = context.getBean(SingleInstanceScheduledBeanPostProcessor.class)
				.getScheduledTasks()
				.stream()
				.map(ScheduledTask::nextExecution)
				.findFirst()
				.orElseThrow();
			// the scheduler tells the next run as now plus its delay: round to the tick's second
			ScheduledJobProcess.append(output, "next " + zone + " " + Math.round(next.toEpochMilli() / 1000.0) * 1000);
		}
		catch (RuntimeException ex) {
			Throwable cause = ex;
			while (cause.getCause() != null) {
				cause = cause.getCause();
			}
			String action = (cause instanceof LockConfigurationException failure) ? " " + failure.getAction() : "";
			ScheduledJobProcess.append(output, "failed " + zone + " " + (cause.getMessage() + action).replace('\n', ' '));
			System.exit(1);
		}
		System.exit(0);
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration(HoldfastAutoConfiguration.class)
	static class ProcessConfiguration {

		@Bean
		Nightly nightly() {
			return new Nightly();
		}

	}

	static class Nightly {

		@SingleInstanceScheduled(cron = "0 30 2 * * *", name = "nightly")
		void run() {
		}

	}

}
