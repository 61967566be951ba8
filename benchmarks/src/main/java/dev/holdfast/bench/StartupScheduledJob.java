package dev.holdfast.bench;

import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * An application that schedules a job of its own, for {@link StartupCost}'s third comparison: a
 * {@code @Scheduled} method every 2 s, as often as the sample's job runs, so that Spring Boot's
 * scheduler (its thread {@code scheduling-1}) exists without Holdfast too. With Holdfast, the
 * sample's {@code @SingleInstanceScheduled} job runs on that same scheduler. Added to both sides
 * with {@code spring.main.sources}.
 */
@Configuration(proxyBeanMethods = false)
@EnableScheduling
public class StartupScheduledJob {

	@Scheduled(cron = "*/2 * * * * *")
	void tick() {
		// the application's job: here, nothing
	}

}
