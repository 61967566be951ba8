package dev.holdfast.scheduling;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.core.DefaultLockTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Three application contexts (instances) share one backend and schedule the same cron job every
 * second; each run records its tick. Subclasses say which backend.
 */
abstract class AbstractSingleInstanceClusterTests {

	private static final int TICKS = 8;

	private final List<ConfigurableApplicationContext> instances = new ArrayList<>();

	private final TickRecorder recorder = new TickRecorder();

	private final String jobName = "tick-" + UUID.randomUUID();

	/** Configuration that makes every instance use the shared backend. */
	protected abstract void configureBackend(SpringApplicationBuilder builder);

	/** The backend name the instances must use. */
	protected abstract String expectedBackend();

	@AfterEach
	void closeInstances() {
		this.instances.forEach(ConfigurableApplicationContext::close);
	}

	/** Whether to run the unskewed scenario too; the skewed one is strictly harder. */
	protected boolean runUnskewed() {
		return false;
	}

	@Test
	void eachTickRunsExactlyOnceAcrossThreeInstancesWithClocksSkewedBy700ms() throws Exception {
		start("ahead", Duration.ofMillis(700));
		start("exact", Duration.ZERO);
		start("late", Duration.ofMillis(-700));
		Instant from = Instant.now().plusSeconds(1);
		List<TickRecorder.Run> runs = awaitTicks(from);
		TickRecorder.assertEachTickExactlyOnce(runs, from, TICKS);
	}

	@Test
	void eachTickRunsExactlyOnceAcrossThreeInstances() throws Exception {
		org.junit.jupiter.api.Assumptions.assumeTrue(runUnskewed(), "the skewed scenario covers this backend");
		start("a", Duration.ZERO);
		start("b", Duration.ZERO);
		start("c", Duration.ZERO);
		Instant from = Instant.now().plusSeconds(1);
		List<TickRecorder.Run> runs = awaitTicks(from);
		TickRecorder.assertEachTickExactlyOnce(runs, from, TICKS);
		assertThat(runs.stream().map(TickRecorder.Run::instance).distinct()).as("instances that ran ticks")
			.hasSizeGreaterThanOrEqualTo(1);
	}

	/**
	 * Waits until the instances have run two ticks more than the test checks, so that a late
	 * duplicate of a checked tick (an instance up to 700 ms behind) has had time to show.
	 */
	private List<TickRecorder.Run> awaitTicks(Instant from) {
		return await().atMost(Duration.ofSeconds(TICKS + 25))
			.until(this.recorder::runs, (runs) -> runs.stream()
				.map(TickRecorder.Run::tick)
				.filter((tick) -> !tick.isBefore(from))
				.distinct()
				.count() >= TICKS + 2);
	}

	private void start(String instance, Duration skew) {
		Clock clock = Clock.offset(Clock.systemUTC(), skew);
		SpringApplicationBuilder builder = new SpringApplicationBuilder(JobConfiguration.class)
			.web(WebApplicationType.NONE)
			.logStartupInfo(false)
			.bannerMode(org.springframework.boot.Banner.Mode.OFF)
			.properties("job.name=" + this.jobName, "instance=" + instance)
			.initializers((context) -> {
				context.getBeanFactory().registerSingleton("clock", clock);
				context.getBeanFactory().registerSingleton("recorder", this.recorder);
			});
		configureBackend(builder);
		ConfigurableApplicationContext context = builder.run();
		this.instances.add(context);
		assertThat(context.getBean(DefaultLockTemplate.class).backend().name()).isEqualTo(expectedBackend());
	}

	@Configuration(proxyBeanMethods = false)
	static class JobConfiguration {

		@Bean
		TickJob tickJob(TickRecorder recorder, org.springframework.core.env.Environment environment) {
			return new TickJob(recorder, environment.getRequiredProperty("instance"));
		}

	}

	static class TickJob {

		private final TickRecorder recorder;

		private final String instance;

		TickJob(TickRecorder recorder, String instance) {
			this.recorder = recorder;
			this.instance = instance;
		}

		@SingleInstanceScheduled(cron = "* * * * * *", name = "${job.name}", lockAtMostFor = "900ms")
		void tick() {
			this.recorder.record(ScheduledTick.current().orElseThrow(), this.instance);
		}

	}

}
