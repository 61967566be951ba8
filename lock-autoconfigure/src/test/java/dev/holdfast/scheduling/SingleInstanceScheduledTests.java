package dev.holdfast.scheduling;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import reactor.core.publisher.Mono;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.task.TaskSchedulingAutoConfiguration;
import org.springframework.boot.logging.LogLevel;
import org.springframework.boot.logging.LoggingSystem;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.TaskScheduler;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.ScheduledAnnotationBeanPostProcessor;
import org.springframework.scheduling.annotation.Scheduled;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockContext;
import dev.holdfast.LockListener;
import dev.holdfast.ScheduledTick;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.actuate.LockMetricsListener;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

@ExtendWith(OutputCaptureExtension.class)
class SingleInstanceScheduledTests {

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
		.withBean("sharedBackend", LockBackend.class, () -> this.backend);

	@Test
	void withoutEnableSchedulingJobsRunOnASchedulerOfTheirOwn() {
		this.runner.withUserConfiguration(QuickJob.class).run((context) -> {
			assertThat(context).doesNotHaveBean(TaskScheduler.class);
			QuickJob job = context.getBean(QuickJob.class);
			assertThat(job.started.await(10, TimeUnit.SECONDS)).isTrue();
			assertThat(job.threads).allMatch((name) -> name.startsWith("holdfast-scheduling-"));
			assertThat(context.getBean(SingleInstanceScheduledBeanPostProcessor.class).getScheduledTasks())
				.hasSize(1);
		});
	}

	@Test
	void withEnableSchedulingEachMethodIsRegisteredOnceOnTheApplicationScheduler() {
		this.runner.withConfiguration(AutoConfigurations.of(TaskSchedulingAutoConfiguration.class))
			.withUserConfiguration(EnableSchedulingConfiguration.class, MixedJobs.class)
			.run((context) -> {
				assertThat(context).hasSingleBean(TaskScheduler.class);
				MixedJobs jobs = context.getBean(MixedJobs.class);
				assertThat(jobs.started.await(10, TimeUnit.SECONDS)).isTrue();
				assertThat(context.getBean(ScheduledAnnotationBeanPostProcessor.class).getScheduledTasks())
					.singleElement()
					.satisfies((task) -> assertThat(task.toString()).contains("plain"));
				assertThat(context.getBean(SingleInstanceScheduledBeanPostProcessor.class).getScheduledTasks())
					.singleElement()
					.satisfies((task) -> assertThat(task.toString()).contains("single"));
				// Boot's scheduler (thread prefix "scheduling-") runs both; Holdfast created none
				assertThat(jobs.singleThreads).allMatch((name) -> name.startsWith("scheduling-"));
			});
	}

	@Test
	void placeholdersAreResolved() {
		this.runner.withPropertyValues("job.rate=50ms", "job.name=resolved-job")
			.withUserConfiguration(PlaceholderJob.class)
			.run((context) -> {
				PlaceholderJob job = context.getBean(PlaceholderJob.class);
				assertThat(job.started.await(10, TimeUnit.SECONDS)).isTrue();
				assertThat(this.backend.tryAcquire("holdfast:resolved-job", "probe", Duration.ofSeconds(1)).acquired())
					.as("the job lock is kept for lockAtLeastFor under the resolved name")
					.isFalse();
			});
	}

	@Test
	void cronTickStaysClaimedAfterTheRunWhileTheJobLockIsReleased() {
		// a backend without tick records, on which the tick is claimed as a lock of its own
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
			.withBean("sharedBackend", LockBackend.class, () -> new LocksOnlyBackend(this.backend))
			.withUserConfiguration(CronJob.class)
			.run((context) -> {
				CronJob job = context.getBean(CronJob.class);
				assertThat(job.ran.await(10, TimeUnit.SECONDS)).isTrue();
				await().atMost(Duration.ofSeconds(2))
					.alias("the job lock after a run without lockAtLeastFor")
					.until(() -> this.backend.tryAcquire("holdfast:cron-job", "probe", Duration.ofMillis(1)).acquired());
				long tick = job.ticks.get(0);
				AcquireResult claim = this.backend.tryAcquire("holdfast:cron-job:tick-" + tick, "probe",
						Duration.ofSeconds(1));
				assertThat(claim.acquired()).as("the claim of the tick that ran").isFalse();
				assertThat(claim.holderRemainingMillis()).as("the claim lives past the next tick").isGreaterThan(900);
			});
	}

	@Test
	void lockAtLeastForKeepsTheLockAfterQuickRunsAndSkippedRunsAreCounted() {
		SkipCounter skips = new SkipCounter();
		CopyOnWriteArrayList<Long> starts = new CopyOnWriteArrayList<>();
		ApplicationContextRunner instance = this.runner.withBean(SkipCounter.class, () -> skips)
			.withBean(AtLeastJob.class, () -> new AtLeastJob(starts));
		instance.run((first) -> instance.run((second) -> {
			await().atMost(Duration.ofSeconds(10)).until(() -> starts.size() >= 2 && skips.skipped.get() > 10);
			List<Long> runs = List.copyOf(starts);
			assertThat(runs).hasSizeBetween(2, 3);
			for (int i = 1; i < runs.size(); i++) {
				assertThat(runs.get(i) - runs.get(i - 1)).as("gap between runs, ms").isGreaterThanOrEqualTo(950);
			}
			assertThat(skips.skipped.get()).isGreaterThan(10);
		}));
	}

	@Test
	void claimedTickThatFindsTheJobLockBusyRunsNowhereAndIsCountedAndLoggedAtDebug(CapturedOutput output) {
		LoggingSystem logging = LoggingSystem.get(getClass().getClassLoader());
		logging.setLogLevel(SingleInstanceJob.class.getName(), LogLevel.DEBUG);
		try {
			List<BusyJob.Run> runs = new CopyOnWriteArrayList<>();
			ApplicationContextRunner instance = this.runner
				.withConfiguration(AutoConfigurations.of(HoldfastActuatorAutoConfiguration.class))
				.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
				.withBean(BusyJob.class, () -> new BusyJob(runs));
			instance.run((first) -> instance.run((second) -> {
				await().atMost(Duration.ofSeconds(20)).until(() -> runs.size() >= 3);
				List<BusyJob.Run> ran = List.copyOf(runs);
				for (int i = 1; i < ran.size(); i++) {
					// lockAtLeastFor (1.5 s) keeps the job lock over the next tick: whoever claims
					// it finds the lock busy and skips it, and the others lost the claim.
					assertThat(Duration.ofMillis(ran.get(i).tick() - ran.get(i - 1).tick()))
						.as("between ticks that ran, of %s", ran)
						.isGreaterThanOrEqualTo(Duration.ofSeconds(2));
					assertThat(ran.get(i).token()).as("fencing token of the run after %s", ran.get(i - 1))
						.isGreaterThan(ran.get(i - 1).token());
				}
				assertThat(output).contains("Holdfast skipped job 'busy-job' at tick ")
					.contains(": the job's lock is held by another run (or kept for lockAtLeastFor)")
					.contains("INFO")
					.contains("Holdfast dropped job 'busy-job' at tick ")
					.contains("this instance claimed it, but the job's lock is held by another run (or kept for "
							+ "lockAtLeastFor); the tick runs on no instance");
				assertThat(skipped(first, "job-busy") + skipped(second, "job-busy"))
					.as("holdfast.scheduled.skipped{reason=job-busy} on both instances")
					.isGreaterThanOrEqualTo(1);
				assertThat(skipped(first) + skipped(second)).as("holdfast.scheduled.skipped on both instances")
					.isGreaterThanOrEqualTo(2);
			}));
		}
		finally {
			logging.setLogLevel(SingleInstanceJob.class.getName(), null);
		}
	}

	private static double skipped(ApplicationContext context) {
		return context.getBean(MeterRegistry.class)
			.find(LockMetricsListener.SKIPPED)
			.tags("name", "busy-job", "backend", "memory")
			.counters()
			.stream()
			.mapToDouble(Counter::count)
			.sum();
	}

	private static double skipped(ApplicationContext context, String reason) {
		Counter counter = context.getBean(MeterRegistry.class)
			.find(LockMetricsListener.SKIPPED)
			.tags("name", "busy-job", "backend", "memory", "reason", reason)
			.counter();
		return (counter != null) ? counter.count() : 0;
	}

	@Test
	void holdfastSchedulingZoneIsTheZoneOfCronJobsThatSetNoneAndTheAnnotationWins() {
		this.runner.withPropertyValues("holdfast.scheduling.zone=Asia/Kolkata")
			.withUserConfiguration(ZonedJobs.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(nextTicks(context)).containsExactlyInAnyOrder(next("Asia/Kolkata"), next("America/New_York"));
			});
	}

	@Test
	void anInvalidHoldfastSchedulingZoneFailsAtStartup() {
		this.runner.withPropertyValues("holdfast.scheduling.zone=Mars/Olympus")
			.withUserConfiguration(ZonedJobs.class)
			.run((context) -> assertThat(context).hasFailed()
				.getFailure()
				.rootCause()
				.hasMessageContaining("holdfast.scheduling.zone 'Mars/Olympus' is not a time zone"));
	}

	@Test
	void aBackendWithoutTickRecordsWarnsAtStartupThatInstanceClocksDecide(CapturedOutput output) {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
			.withBean("sharedBackend", LockBackend.class, () -> new LocksOnlyBackend(this.backend))
			.withUserConfiguration(CronJob.class)
			.run((context) -> assertThat(output).contains("The memory lock backend keeps no tick records (it does "
					+ "not implement TickClaims): which tick of a cron or fixed-rate @SingleInstanceScheduled job is "
					+ "due is decided by each instance's clock"));
		assertThat(output).containsOnlyOnce("keeps no tick records");
	}

	private static java.util.List<Long> nextTicks(ApplicationContext context) {
		return context.getBean(SingleInstanceScheduledBeanPostProcessor.class)
			.getScheduledTasks()
			.stream()
			.map((task) -> Math.round(task.nextExecution().toEpochMilli() / 1000.0) * 1000)
			.toList();
	}

	private static long next(String zone) {
		java.time.ZonedDateTime now = java.time.ZonedDateTime.now(java.time.ZoneId.of(zone));
		java.time.ZonedDateTime next = now.withHour(2).withMinute(30).withSecond(0).withNano(0);
		return (next.isAfter(now) ? next : next.plusDays(1)).toInstant().toEpochMilli();
	}

	static class ZonedJobs {

		@SingleInstanceScheduled(cron = "0 30 2 * * *", name = "zone-from-property")
		void fromProperty() {
		}

		@SingleInstanceScheduled(cron = "0 30 2 * * *", name = "zone-from-annotation", zone = "America/New_York")
		void fromAnnotation() {
		}

	}

	/**
	 * The job lock is a lease of holdfast.lease-time (200 ms), renewed while the run lasts, up to
	 * lockAtMostFor (1 s): then the run loses it, with a WARN naming the job and the cap, while it
	 * still runs, and another owner may take the lock. Before, the lock was taken for lockAtMostFor
	 * and never renewed, and nothing was said until the run ended.
	 */
	@Test
	void theJobLockIsRenewedPastTheLeaseTimeAndLostAtLockAtMostFor(CapturedOutput output) {
		ApplicationContextRunner runner = this.runner.withPropertyValues("holdfast.lease-time=200ms");
		runner.withUserConfiguration(SlowJob.class).run((context) -> {
			SlowJob job = context.getBean(SlowJob.class);
			assertThat(job.started.await(10, TimeUnit.SECONDS)).isTrue();
			long started = System.nanoTime();
			assertThat(this.backend.tryAcquire("holdfast:slow-job", "probe", Duration.ofMillis(1)).acquired())
				.as("while the run is young").isFalse();
			assertThat(job.lease.expiresAt()).as("a lease of holdfast.lease-time, not of lockAtMostFor")
				.isBefore(Instant.now().plusMillis(250));
			await().during(Duration.ofMillis(600)).atMost(Duration.ofSeconds(3))
				.until(() -> !this.backend.tryAcquire("holdfast:slow-job", "probe", Duration.ofMillis(1)).acquired());
			assertThat(job.lease.isValid()).as("the run's lease after three lease times").isTrue();
			await().atMost(Duration.ofMillis(2500))
				.alias("after lockAtMostFor, no longer renewed")
				.until(() -> this.backend.tryAcquire("holdfast:slow-job", "probe", Duration.ofMillis(1)).acquired());
			assertThat(Duration.ofNanos(System.nanoTime() - started)).as("held until lockAtMostFor (1s)")
				.isGreaterThan(Duration.ofMillis(900));
			assertThat(job.lease.isValid()).as("the run's lease after lockAtMostFor").isFalse();
			assertThat(job.finished.getCount()).as("the run still runs").isOne();
			await().atMost(Duration.ofSeconds(2)).until(() -> output.toString().contains("Holdfast lost lock"));
			assertThat(output).contains("WARN")
				.contains("job 'slow-job' has run for its lockAtMostFor (PT1S)")
				.contains("another instance may start the job");
			job.release.countDown();
			assertThat(job.finished.await(10, TimeUnit.SECONDS)).isTrue();
			await().atMost(Duration.ofSeconds(2))
				.until(() -> output.toString().contains("Holdfast job 'slow-job' ended "));
			assertThat(output).contains("past its lockAtMostFor (PT1S)");
		});
	}

	@Test
	void theJobLeaseTimeIsTheAnnotationsElseHoldfastLeaseTimeAndAtMostLockAtMostFor() {
		ApplicationContextRunner runner = this.runner.withPropertyValues("holdfast.lease-time=3s");
		runner.withUserConfiguration(LeaseTimes.class).run((context) -> {
			LeaseTimes jobs = context.getBean(LeaseTimes.class);
			await().atMost(Duration.ofSeconds(10)).until(() -> jobs.leaseTimes.size() == 3);
			assertThat(jobs.leaseTimes.get("annotation")).as("leaseTime = 2s").isBetween(Duration.ofMillis(1900),
					Duration.ofSeconds(2));
			assertThat(jobs.leaseTimes.get("property")).as("holdfast.lease-time=3s").isBetween(Duration.ofMillis(2900),
					Duration.ofSeconds(3));
			assertThat(jobs.leaseTimes.get("capped")).as("lockAtMostFor = 500ms").isBetween(Duration.ofMillis(400),
					Duration.ofMillis(500));
		});
	}

	@Test
	void leaseTimeLongerThanLockAtMostForFailsAtStartup() {
		assertStartupFailure(LeaseOverAtMost.class, "LeaseOverAtMost.job",
				"has a leaseTime of PT2S, longer than its lockAtMostFor (PT1S)");
	}

	@Test
	void leaseTimeShorterThanAMillisecondFailsAtStartup() {
		assertStartupFailure(LeaseUnderAMillisecond.class, "LeaseUnderAMillisecond.job", "shorter than 1ms");
	}

	@Test
	void failingJobIsLoggedAndTheNextRunHappens(CapturedOutput output) {
		this.runner.withUserConfiguration(FailingJob.class).run((context) -> {
			FailingJob job = context.getBean(FailingJob.class);
			Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> job.runs.get() >= 2);
			assertThat(output).contains("ERROR").contains("Holdfast job 'failing-job' failed").contains("boom 1");
		});
	}

	@Test
	void backendFailureSkipsTheRunWithAWarning(CapturedOutput output) {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
			.withBean(LockBackend.class, FailingBackend::new)
			.withUserConfiguration(QuickJob.class)
			.run((context) -> {
				Awaitility.await().atMost(Duration.ofSeconds(10)).until(() -> output.toString().contains(
						"because the lock backend failed; the job did not run"));
				assertThat(output).contains("Holdfast skipped job 'quick-job' at tick ");
				assertThat(context.getBean(QuickJob.class).started.getCount()).isOne();
				assertThat(output).contains("WARN");
			});
	}

	@Test
	void disabledByProperty() {
		this.runner.withPropertyValues("holdfast.scheduling.enabled=false")
			.withUserConfiguration(QuickJob.class)
			.run((context) -> assertThat(context).doesNotHaveBean(SingleInstanceScheduledBeanPostProcessor.class));
	}

	@Test
	void lockAtLeastForLongerThanLockAtMostForFailsAtStartup() {
		assertStartupFailure(AtLeastOverAtMost.class, "AtLeastOverAtMost.job",
				"lockAtLeastFor) but at most for PT1S (lockAtMostFor)");
	}

	@Test
	void invalidCronFailsAtStartup() {
		assertStartupFailure(BadCron.class, "BadCron.job", "invalid cron expression '* * *'");
	}

	@Test
	void invalidDurationFailsAtStartup() {
		assertStartupFailure(BadDuration.class, "BadDuration.job", "invalid fixedRate 'soon'");
	}

	@Test
	void missingTriggerFailsAtStartup() {
		assertStartupFailure(NoTrigger.class, "NoTrigger.job", "sets none of cron, fixedRate and fixedDelay");
	}

	@Test
	void twoTriggersFailAtStartup() {
		assertStartupFailure(TwoTriggers.class, "TwoTriggers.job", "sets [cron, fixedDelay]");
	}

	@Test
	void methodWithParametersFailsAtStartup() {
		assertStartupFailure(WithParameter.class, "WithParameter.job", "has parameters");
	}

	@Test
	void futureReturnTypeFailsAtStartup() {
		assertStartupFailure(ReturnsFuture.class, "ReturnsFuture.job",
				"returns java.util.concurrent.CompletableFuture, but a job holds its lock only until");
	}

	@Test
	void publisherReturnTypeFailsAtStartup() {
		assertStartupFailure(ReturnsMono.class, "ReturnsMono.job", "returns reactor.core.publisher.Mono");
	}

	@Test
	void jobNameUsedTwiceFailsAtStartup() {
		assertStartupFailure(SameName.class, "SameName.one", "both use the job name 'same'");
	}

	@Test
	void invalidDefaultFailsAtStartup() {
		this.runner.withPropertyValues("holdfast.scheduling.lock-at-least-for=20m")
			.withUserConfiguration(QuickJob.class)
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("holdfast.scheduling.lock-at-least-for (PT20M)"));
	}

	private void assertStartupFailure(Class<?> configuration, String method, String problem) {
		this.runner.withUserConfiguration(configuration)
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining(method)
				.hasMessageContaining(problem)
				.satisfies((ex) -> assertThat(((LockConfigurationException) ex).getAction()).isNotBlank()));
	}

	@Configuration(proxyBeanMethods = false)
	@EnableScheduling
	static class EnableSchedulingConfiguration {

	}

	static class QuickJob {

		final CountDownLatch started = new CountDownLatch(1);

		final List<String> threads = new CopyOnWriteArrayList<>();

		@SingleInstanceScheduled(fixedRate = "100", name = "quick-job")
		void run() {
			this.threads.add(Thread.currentThread().getName());
			this.started.countDown();
		}

	}

	static class MixedJobs {

		final CountDownLatch started = new CountDownLatch(2);

		final List<String> singleThreads = new CopyOnWriteArrayList<>();

		@Scheduled(fixedRate = 100)
		void plain() {
			this.started.countDown();
		}

		@SingleInstanceScheduled(fixedRate = "100ms")
		void single() {
			this.singleThreads.add(Thread.currentThread().getName());
			this.started.countDown();
		}

	}

	static class PlaceholderJob {

		final CountDownLatch started = new CountDownLatch(1);

		@SingleInstanceScheduled(fixedRate = "${job.rate}", name = "${job.name}", lockAtLeastFor = "PT5S")
		void run() {
			this.started.countDown();
		}

	}

	static class CronJob {

		final CountDownLatch ran = new CountDownLatch(1);

		final List<Long> ticks = new CopyOnWriteArrayList<>();

		@SingleInstanceScheduled(cron = "* * * * * *", name = "cron-job")
		void run() {
			this.ticks.add(ScheduledTick.current().orElseThrow().toEpochMilli());
			this.ran.countDown();
		}

	}

	static class AtLeastJob {

		private final List<Long> starts;

		AtLeastJob(List<Long> starts) {
			this.starts = starts;
		}

		@SingleInstanceScheduled(fixedRate = "100ms", name = "at-least-job", lockAtLeastFor = "1s")
		void run() {
			this.starts.add(System.nanoTime() / 1_000_000);
		}

	}

	static class SkipCounter implements LockListener {

		final AtomicInteger skipped = new AtomicInteger();

		@Override
		public void tickSkipped(String name, String backend, String reason) {
			if (name.equals("at-least-job")) {
				this.skipped.incrementAndGet();
			}
		}

	}

	static class BusyJob {

		private final List<Run> runs;

		BusyJob(List<Run> runs) {
			this.runs = runs;
		}

		@SingleInstanceScheduled(cron = "* * * * * *", name = "busy-job", lockAtLeastFor = "1500ms")
		void run() {
			this.runs.add(new Run(ScheduledTick.current().orElseThrow().toEpochMilli(),
					LockContext.requireLease().fencingToken()));
		}

		record Run(long tick, long token) {

		}

	}

	static class SlowJob {

		final CountDownLatch started = new CountDownLatch(1);

		final CountDownLatch finished = new CountDownLatch(1);

		/** Counted down by the test once it has seen the lock end while the run goes on. */
		final CountDownLatch release = new CountDownLatch(1);

		volatile Lease lease;

		@SingleInstanceScheduled(fixedDelay = "1h", name = "slow-job", lockAtMostFor = "1s")
		void run() throws InterruptedException {
			this.lease = LockContext.requireLease();
			this.started.countDown();
			this.release.await(10, TimeUnit.SECONDS);
			this.finished.countDown();
		}

	}

	static class FailingJob {

		final AtomicInteger runs = new AtomicInteger();

		@SingleInstanceScheduled(fixedDelay = "50ms", name = "failing-job")
		void run() {
			int run = this.runs.incrementAndGet();
			if (run == 1) {
				throw new IllegalStateException("boom " + run);
			}
		}

	}

	static class FailingBackend implements LockBackend {

		@Override
		public String name() {
			return "failing";
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			throw new LockBackendException("backend down", null);
		}

		@Override
		public boolean release(String key, String owner) {
			throw new LockBackendException("backend down", null);
		}

	}

	static class LeaseTimes {

		final Map<String, Duration> leaseTimes = new ConcurrentHashMap<>();

		@SingleInstanceScheduled(fixedDelay = "1h", leaseTime = "2s")
		void annotation() {
			record("annotation");
		}

		@SingleInstanceScheduled(fixedDelay = "1h")
		void property() {
			record("property");
		}

		@SingleInstanceScheduled(fixedDelay = "1h", lockAtMostFor = "500ms")
		void capped() {
			record("capped");
		}

		private void record(String job) {
			Lease lease = LockContext.requireLease();
			this.leaseTimes.put(job, Duration.between(lease.acquiredAt(), lease.expiresAt()));
		}

	}

	static class LeaseOverAtMost {

		@SingleInstanceScheduled(fixedRate = "1s", leaseTime = "2s", lockAtMostFor = "1s")
		void job() {
		}

	}

	static class LeaseUnderAMillisecond {

		@SingleInstanceScheduled(fixedRate = "1s", leaseTime = "500us")
		void job() {
		}

	}

	static class AtLeastOverAtMost {

		@SingleInstanceScheduled(fixedRate = "1s", lockAtLeastFor = "2s", lockAtMostFor = "1s")
		void job() {
		}

	}

	static class BadCron {

		@SingleInstanceScheduled(cron = "* * *")
		void job() {
		}

	}

	static class BadDuration {

		@SingleInstanceScheduled(fixedRate = "soon")
		void job() {
		}

	}

	static class NoTrigger {

		@SingleInstanceScheduled
		void job() {
		}

	}

	static class TwoTriggers {

		@SingleInstanceScheduled(cron = "* * * * * *", fixedDelay = "1s")
		void job() {
		}

	}

	static class WithParameter {

		@SingleInstanceScheduled(fixedRate = "1s")
		void job(String value) {
		}

	}

	static class ReturnsFuture {

		@SingleInstanceScheduled(fixedRate = "1s")
		CompletableFuture<Void> job() {
			return CompletableFuture.completedFuture(null);
		}

	}

	static class ReturnsMono {

		@SingleInstanceScheduled(fixedRate = "1s")
		Mono<Void> job() {
			return Mono.empty();
		}

	}

	static class SameName {

		@SingleInstanceScheduled(fixedRate = "1s", name = "same")
		void one() {
		}

		@SingleInstanceScheduled(fixedRate = "1s", name = "same")
		void two() {
		}

	}

}
