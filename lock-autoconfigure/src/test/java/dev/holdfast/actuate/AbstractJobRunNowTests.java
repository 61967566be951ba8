package dev.holdfast.actuate;

import java.security.Principal;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.actuate.JobsView.JobRunDescriptor;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * An operator runs a job now through the {@code locks} endpoint of one of two instances that
 * share a backend: it starts on that instance, on the job's scheduler and not on the caller's
 * thread; while it runs, a run now on either instance is answered busy with the holder's name;
 * the job ran once. A subclass per backend gives each instance a client of its own.
 */
@ExtendWith(OutputCaptureExtension.class)
abstract class AbstractJobRunNowTests {

	static final SecurityContext ALICE = new SecurityContext() {

		@Override
		public Principal getPrincipal() {
			return () -> "alice";
		}

		@Override
		public boolean isUserInRole(String role) {
			return true;
		}

	};

	/** A client of the backend under test, as another process would have. */
	protected abstract LockBackend newBackend();

	private ApplicationContextRunner instance(String name) {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class,
					HoldfastActuatorAutoConfiguration.class, EndpointAutoConfiguration.class))
			.withBean(LockBackend.class, this::newBackend)
			.withBean(ReportJob.class)
			.withPropertyValues("management.endpoints.web.exposure.include=locks", "holdfast.instance-name=" + name);
	}

	@Test
	void runNowStartsTheJobOnceAndWhileItRunsEitherInstanceIsAnsweredBusyWithTheHolder(CapturedOutput output) {
		instance("ops-1").run((first) -> instance("ops-2").run((second) -> {
			ReportJob firstJob = first.getBean(ReportJob.class);
			ReportJob secondJob = second.getBean(ReportJob.class);
			WebEndpointResponse<JobRunDescriptor> started = runNow(first, "report");
			assertThat(started.getStatus()).isEqualTo(200);
			assertThat(started.getBody()).isEqualTo(new JobRunDescriptor("report", "started", "ops-1", null));
			assertThat(firstJob.running.await(10, TimeUnit.SECONDS)).as("the run started").isTrue();
			assertThat(firstJob.thread).as("run on the job's scheduler").isNotEqualTo(Thread.currentThread().getName());
			assertThat(output).contains("Job 'report' runs now on this instance, started by alice");

			for (AssertableApplicationContext context : new AssertableApplicationContext[] { second, first }) {
				WebEndpointResponse<JobRunDescriptor> busy = runNow(context, "report");
				assertThat(busy.getStatus()).isEqualTo(409);
				assertThat(busy.getBody().outcome()).isEqualTo("busy");
				assertThat(busy.getBody().holder()).as("the instance running it").isEqualTo("ops-1");
				assertThat(busy.getBody().reason()).contains("lock is held");
			}
			firstJob.finish.countDown();
			await().atMost(Duration.ofSeconds(10)).until(() -> firstJob.ended.get() == 1);
			assertThat(firstJob.runs.get() + secondJob.runs.get()).as("runs of the job anywhere").isEqualTo(1);
			assertThat(secondJob.running.getCount()).isEqualTo(1);
		}));
	}

	@Test
	void runNowOfAnUnknownJobIsNotFoundAndNamesTheInstancesJobs() {
		instance("ops-1").run((context) -> {
			WebEndpointResponse<JobRunDescriptor> answer = runNow(context, "reprot");
			assertThat(answer.getStatus()).isEqualTo(404);
			assertThat(answer.getBody().outcome()).isEqualTo("unknown");
			assertThat(answer.getBody().reason())
				.isEqualTo("No @SingleInstanceScheduled job 'reprot' on this instance; its jobs: report");
			assertThat(context.getBean(LocksEndpoint.class).runJob(ALICE, "cluster", "report").getStatus())
				.isEqualTo(404);
		});
	}

	private static WebEndpointResponse<JobRunDescriptor> runNow(AssertableApplicationContext context, String job) {
		return context.getBean(LocksEndpoint.class).runJob(ALICE, "jobs", job);
	}

	static class ReportJob {

		final AtomicInteger runs = new AtomicInteger();

		final AtomicInteger ended = new AtomicInteger();

		final CountDownLatch running = new CountDownLatch(1);

		final CountDownLatch finish = new CountDownLatch(1);

		volatile String thread;

		/** Never fires by itself during a test: it runs when an operator says so. */
		@SingleInstanceScheduled(cron = "0 0 0 1 1 *", name = "report", lockAtMostFor = "60s")
		void report() throws InterruptedException {
			this.runs.incrementAndGet();
			this.thread = Thread.currentThread().getName();
			this.running.countDown();
			this.finish.await(20, TimeUnit.SECONDS);
			this.ended.incrementAndGet();
		}

	}

}
