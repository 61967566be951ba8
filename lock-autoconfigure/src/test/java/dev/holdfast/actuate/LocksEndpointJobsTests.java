package dev.holdfast.actuate;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.actuate.JobsView.JobDescriptor;
import dev.holdfast.actuate.JobsView.JobsDescriptor;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The {@code locks/jobs} view, read on two instances that share one backend: each lists the job
 * with its trigger, zone and next tick, the last tick claimed anywhere (the backend's record),
 * the instance whose run holds the job lock, and the ticks it skipped itself, by reason.
 */
class LocksEndpointJobsTests {

	private final InMemoryLockBackend shared = new InMemoryLockBackend();

	private ApplicationContextRunner instance(String name) {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class,
					HoldfastActuatorAutoConfiguration.class, EndpointAutoConfiguration.class))
			.withBean(InMemoryLockBackend.class, () -> this.shared)
			.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
			.withBean(BlockingJob.class)
			.withPropertyValues("management.endpoints.web.exposure.include=locks", "holdfast.instance-name=" + name);
	}

	@Test
	void eachInstanceSeesTheJobsLastTickAnywhereTheInstanceRunningItAndItsOwnSkips() {
		instance("jobs-1").run((first) -> instance("jobs-2").run((second) -> {
			await().atMost(Duration.ofSeconds(10)).until(() -> running(first) || running(second));
			AssertableApplicationContext runner = running(first) ? first : second;
			AssertableApplicationContext other = (runner == first) ? second : first;
			String runnerName = (runner == first) ? "jobs-1" : "jobs-2";
			await().atMost(Duration.ofSeconds(10)).until(() -> !jobs(other).skipped().isEmpty());

			JobDescriptor job = jobs(other);
			assertThat(job.name()).isEqualTo("export");
			assertThat(job.trigger()).isEqualTo("fixed rate PT1S");
			assertThat(job.zone()).as("fixed-rate ticks ignore zones: UTC").isEqualTo("Z");
			assertThat(job.nextTick()).isAfter(Instant.now().minusSeconds(1));
			assertThat(job.lastClaimedTick()).isBetween(Instant.now().minusSeconds(10), Instant.now());
			assertThat(job.lockHolder()).as("the instance running the job").isEqualTo(runnerName);
			assertThat(job.lockToken()).isPositive();
			assertThat(job.backend()).as("absent on the default backend, as before named backends").isNull();
			// Which instance claims a tick is a race: the other one skips it as claimed elsewhere,
			// or claims it and finds the job lock held by the running one.
			assertThat(job.skipped().keySet()).isNotEmpty().isSubsetOf("ran-elsewhere", "job-busy");
			assertThat(jobs(runner).lockHolder()).isEqualTo(runnerName);
			runner.getBean(BlockingJob.class).finish.countDown();
			other.getBean(BlockingJob.class).finish.countDown();
		}));
	}

	private static boolean running(AssertableApplicationContext context) {
		return context.getBean(BlockingJob.class).running.getCount() == 0;
	}

	private static JobDescriptor jobs(AssertableApplicationContext context) {
		JobsDescriptor jobs = (JobsDescriptor) context.getBean(LocksEndpoint.class).scope(SecurityContext.NONE, "jobs");
		assertThat(jobs.jobs()).hasSize(1);
		return jobs.jobs().get(0);
	}

	static class BlockingJob {

		final CountDownLatch running = new CountDownLatch(1);

		final CountDownLatch finish = new CountDownLatch(1);

		@SingleInstanceScheduled(fixedRate = "1s", name = "export", lockAtMostFor = "60s")
		void export() throws InterruptedException {
			this.running.countDown();
			this.finish.await(20, TimeUnit.SECONDS);
		}

	}

}
