package dev.holdfast.scheduling;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockContext;
import dev.holdfast.LockListener;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A {@link SingleInstanceScheduled} method reads the lease of its job lock from
 * {@link LockContext}: the backend's fencing token of the run, and whether the run still holds
 * the lock. Instances are application contexts on one real backend; subclasses say which.
 */
@ExtendWith(OutputCaptureExtension.class)
abstract class AbstractJobLeaseTests {

	private final String jobName = "lease-" + UUID.randomUUID();

	/** A runner whose contexts use the backend under test, shared between them. */
	protected abstract ApplicationContextRunner runner();

	/** The backend name the contexts must use. */
	protected abstract String expectedBackend();

	private ApplicationContextRunner instance(String id, Class<?> job, Object recorder) {
		return runner().withPropertyValues("job.name=" + this.jobName, "instance=" + id)
			.withInitializer((context) -> context.getBeanFactory().registerSingleton("recorder", recorder))
			.withUserConfiguration(job);
	}

	@Test
	void runsReadTheirLeaseAndTokensIncreaseRunOverRunAcrossTwoInstances() {
		Runs runs = new Runs();
		instance("a", FrequentJob.class, runs).run((a) -> instance("b", FrequentJob.class, runs).run((b) -> {
			assertThat(a.getBean(DefaultLockTemplate.class).backend().name()).isEqualTo(expectedBackend());
			await().atMost(Duration.ofSeconds(20))
				.until(() -> runs.of("a").size() >= 5 && runs.of("b").size() >= 5);
			List<Run> recorded = List.copyOf(runs.all);
			String key = a.getBean(DefaultLockTemplate.class).keyFor(this.jobName, null);
			assertThat(recorded).allSatisfy((run) -> {
				assertThat(run.key()).isEqualTo(key);
				assertThat(run.valid()).as("valid when the run starts").isTrue();
			});
			// Runs record under the job lock, so the list is in the order the lock was taken.
			assertThat(recorded.stream().map(Run::token).toList()).as("tokens in the order of the runs, of %s",
					recorded)
				.isSorted()
				.doesNotHaveDuplicates();
			assertThat(runs.of("a")).as("tokens of one instance, run over run").isSorted().doesNotHaveDuplicates();
			assertThat(runs.of("b")).as("tokens of one instance, run over run").isSorted().doesNotHaveDuplicates();
		}));
	}

	/**
	 * A run longer than its lease time keeps its job lock while it lasts: the lease (holdfast.lease-time,
	 * 1 s) is renewed, so neither another instance's runs nor another owner get the lock, and the
	 * lease's expiry stays within one lease time of now. Before, the lock was taken for
	 * lockAtMostFor (1 min) and never renewed.
	 */
	@Test
	void runLongerThanItsLeaseTimeKeepsItsLockRenewedAgainstOtherInstances() {
		KeptRuns runs = new KeptRuns(Duration.ofMillis(3500));
		instance("a", KeptJob.class, runs).withPropertyValues("holdfast.lease-time=1s")
			.run((a) -> instance("b", KeptJob.class, runs).withPropertyValues("holdfast.lease-time=1s").run((b) -> {
				assertThat(runs.longRunStarted.await(20, TimeUnit.SECONDS)).as("the long run started").isTrue();
				LockBackend backend = a.getBean(LockBackend.class);
				Lease lease = runs.lease;
				while (runs.longRunEnded.getCount() > 0) {
					if (backend.tryAcquire(lease.key(), "probe", Duration.ofMillis(200)).acquired()) {
						// The run ends (and counts down) before its lock is released.
						assertThat(runs.longRunEnded.getCount()).as("another owner took the lock while the run went on")
							.isZero();
						break;
					}
					if (lease.isValid() && runs.longRunEnded.getCount() > 0) {
						assertThat(Duration.between(Instant.now(), lease.expiresAt()))
							.as("the lease's expiry: one lease time ahead, renewed")
							.isLessThanOrEqualTo(Duration.ofSeconds(1));
					}
					Thread.sleep(100);
				}
				assertThat(runs.validAtEnd).as("the lease at the end of a run of 3.5 lease times").isTrue();
				await().atMost(Duration.ofSeconds(20))
					.alias("the job runs on after the long run")
					.until(() -> runs.afterEnd.get() >= 2);
				assertThat(runs.startsDuringLongRun).as("runs that started while the long run lasted").hasValue(0);
			}));
	}

	/**
	 * A run that reaches lockAtMostFor (2.5 s) loses its lease then, while it still runs: its
	 * renewals (holdfast.lease-time, 1 s) end, the lease turns invalid, it is counted lost with a
	 * WARN naming the job and lockAtMostFor, and another owner may take the lock. At its end the
	 * lock is neither kept nor released. Before, nothing was said or counted until the run ended.
	 */
	@Test
	void runThatReachesLockAtMostForLosesItsLeaseThenWithAWarningAndAnotherOwnerMayTakeIt(CapturedOutput output) {
		LongRun run = LongRun.expiring();
		Late lost = new Late();
		instance("a", CappedJob.class, run).withPropertyValues("holdfast.lease-time=1s")
			.withBean(Late.class, () -> lost)
			.run((context) -> {
				assertThat(run.expired.await(20, TimeUnit.SECONDS)).as("the lease turned invalid").isTrue();
				Lease lease = run.lease;
				assertThat(run.validAtStart).isTrue();
				// acquiredAt() is when the engine registered the lease, after the acquiring round trip;
				// the cap counts from when that request was sent.
				assertThat(Duration.between(lease.acquiredAt(), run.invalidAt)).as("time until isValid() turned false")
					.isBetween(Duration.ofMillis(2000), Duration.ofMillis(4000));
				await().atMost(Duration.ofSeconds(2)).alias("the lease counted lost while the run goes on")
					.until(() -> lost.lost.get() == 1);
				assertThat(output).contains("Holdfast lost lock")
					.contains("job '" + this.jobName + "' has run for its lockAtMostFor (PT2.5S)");
				LockBackend backend = context.getBean(LockBackend.class);
				await().atMost(Duration.ofSeconds(5))
					.alias("another owner takes the job lock while the run goes on")
					.until(() -> backend.tryAcquire(lease.key(), "probe", Duration.ofMillis(200)).acquired());
				run.finish.countDown();
				await().atMost(Duration.ofSeconds(5))
					.until(() -> output.toString().contains("Holdfast job '" + this.jobName + "' ended "));
				assertThat(output).contains("past its lockAtMostFor (PT2.5S)");
				assertThat(lost.lost).as("leases counted lost").hasValue(1);
			});
	}

	/**
	 * Quick runs keep their lock for lockAtLeastFor (2.5 s), longer than the lease time (1 s): the
	 * keep is one owner-checked update of the lock's time to live after the run, not a renewal, so
	 * the every-second cron job runs every third tick.
	 */
	@Test
	void quickRunsKeepTheirLockForLockAtLeastForLongerThanTheLeaseTime() {
		Starts starts = new Starts();
		instance("a", AtLeastJob.class, starts).withPropertyValues("holdfast.lease-time=1s").run((context) -> {
			await().atMost(Duration.ofSeconds(20)).until(() -> starts.all.size() >= 3);
			List<Long> runs = List.copyOf(starts.all);
			for (int i = 1; i < runs.size(); i++) {
				assertThat(Duration.ofNanos(runs.get(i) - runs.get(i - 1))).as("between two runs, of %s", runs)
					.isGreaterThanOrEqualTo(Duration.ofMillis(2400));
			}
		});
	}

	/**
	 * The lease's validity counts from before its acquisition or last renewal was sent, less the
	 * drift allowance: a late request (a starved client on a loaded host; an acquisition was seen
	 * taking 12 s) leaves a lease that is invalid here while the backend still holds the lock for
	 * the run. Here the drift allowance is the whole lease time, so that the lease is never valid
	 * here however slow the machine. The run's end keeps that lock for fixedDelay with the
	 * owner-checked update, as after any run, and the lease is not counted lost; releasing it let
	 * the next run start on another instance at once.
	 */
	@Test
	void runWhoseLeaseLapsedHereKeepsTheLockTheBackendStillHoldsForIt(CapturedOutput output) {
		LongRun run = LongRun.expiring();
		ApplicationContextRunner late = instance("a", LateJob.class, run).withUserConfiguration(LateAcquisitions.class);
		late.run((context) -> {
			assertThat(run.expired.await(20, TimeUnit.SECONDS)).as("the lease turned invalid").isTrue();
			LockBackend backend = context.getBean(LockBackend.class);
			String key = run.lease.key();
			assertThat(backend.tryAcquire(key, "probe", Duration.ofMillis(200)).acquired())
				.as("another owner, while the run whose lease lapsed here still holds the lock on the backend")
				.isFalse();
			run.finish.countDown();
			await().atMost(Duration.ofSeconds(10))
				.until(() -> output.toString().contains("job '" + this.jobName + "' ran for")
						|| backend.tryAcquire(key, "probe", Duration.ofMillis(200)).acquired());
			assertThat(backend.tryAcquire(key, "probe", Duration.ofMillis(200)).acquired())
				.as("the job lock after the run, kept for fixedDelay (1h)")
				.isFalse();
			assertThat(context.getBean(Late.class).lost).as("leases counted lost").hasValue(0);
			assertThat(output).contains("backend still held it for this run")
				.doesNotContain("another instance may have started it meanwhile")
				.doesNotContain("Holdfast lost lock");
		});
	}

	/**
	 * A run past its lease's validity whose keep fails (the backend unreachable when the run ends)
	 * cannot tell whether another instance took the lock meanwhile: it is reported as an overrun
	 * and counted lost, and its lock is left to expire on the backend, not released.
	 */
	@Test
	void runWhoseLeaseLapsedAndWhoseKeepFailsIsCountedLost(CapturedOutput output) {
		LongRun run = LongRun.expiring();
		ApplicationContextRunner late = instance("a", LateJob.class, run).withUserConfiguration(LateAcquisitions.class);
		late.run((context) -> {
			assertThat(run.expired.await(20, TimeUnit.SECONDS)).as("the lease turned invalid").isTrue();
			Late lateBackend = context.getBean(Late.class);
			lateBackend.failRenewals = true;
			run.finish.countDown();
			await().atMost(Duration.ofSeconds(10))
				.until(() -> output.toString().contains("Holdfast could not keep the lock of job '" + this.jobName));
			assertThat(lateBackend.lost).as("leases counted lost").hasValue(1);
			assertThat(output).contains("Holdfast lost lock")
				.contains("job '" + this.jobName + "' ran for")
				.contains("past the validity of its lock (not renewed in time), and the " + expectedBackend()
						+ " backend could not be asked whether it still held it")
				.doesNotContain("it expires by its time to live, the lease time at most");
			LockBackend backend = context.getBean(LockBackend.class);
			assertThat(backend.tryAcquire(run.lease.key(), "probe", Duration.ofMillis(200)).acquired())
				.as("the job lock, left to expire on the backend rather than released")
				.isFalse();
		});
	}

	/** A run's extend sets its lock's time to live; its renewals go on with it, up to lockAtMostFor. */
	@Test
	void extendSetsTheJobLocksTimeToLivePastTheLeaseTime(CapturedOutput output) {
		LongRun run = LongRun.extending();
		instance("a", LongJob.class, run).withPropertyValues("holdfast.lease-time=1s").run((context) -> {
			assertThat(run.expired.await(20, TimeUnit.SECONDS)).as("the run passed twice its lease time").isTrue();
			assertThat(run.extended).isTrue();
			assertThat(run.validLater).as("valid after twice its lease time, extended").isTrue();
			assertThat(Duration.between(Instant.now(), run.lease.expiresAt())).as("the extended lease's expiry")
				.isGreaterThan(Duration.ofSeconds(5));
			LockBackend backend = context.getBean(LockBackend.class);
			String key = run.lease.key();
			assertThat(backend.tryAcquire(key, "probe", Duration.ofMillis(200)).acquired())
				.as("another owner, while the extended run goes on")
				.isFalse();
			run.finish.countDown();
			await().atMost(Duration.ofSeconds(5)).alias("the run is over").until(() -> !run.lease.isValid());
			assertThat(backend.tryAcquire(key, "probe", Duration.ofMillis(200)).acquired())
				.as("the job lock, kept for fixedDelay (1h) after the run")
				.isFalse();
			// The run's end logs (on the job's thread) after its lease is kept: awaited, runs stopped.
			AtomicBoolean ended = new AtomicBoolean();
			context.getBean(SingleInstanceScheduledBeanPostProcessor.class).stop(() -> ended.set(true));
			await().atMost(Duration.ofSeconds(5)).alias("the run has ended").untilTrue(ended);
			assertThat(output).doesNotContain("past the validity of its lock");
		});
	}

	record Run(String instance, String key, long token, boolean valid) {

	}

	static class Runs {

		final List<Run> all = new CopyOnWriteArrayList<>();

		List<Long> of(String instance) {
			return this.all.stream().filter((run) -> run.instance().equals(instance)).map(Run::token).toList();
		}

	}

	static class FrequentJob {

		private final Runs runs;

		private final String instance;

		FrequentJob(Runs runs, Environment environment) {
			this.runs = runs;
			this.instance = environment.getRequiredProperty("instance");
		}

		@SingleInstanceScheduled(fixedRate = "50ms", name = "${job.name}")
		void run() {
			Lease lease = LockContext.requireLease();
			this.runs.all.add(new Run(this.instance, lease.key(), lease.fencingToken(), lease.isValid()));
		}

	}

	/** A long run: what it does with its lease, then what it saw; the test ends the run. */
	static class LongRun {

		final CountDownLatch expired = new CountDownLatch(1);

		final CountDownLatch finish = new CountDownLatch(1);

		private final Consumer<LongRun> body;

		volatile Lease lease;

		volatile boolean validAtStart;

		volatile boolean extended;

		volatile boolean validLater;

		volatile Instant invalidAt;

		LongRun(Consumer<LongRun> body) {
			this.body = body;
		}

		/** Waits until the lease is no longer valid. */
		static LongRun expiring() {
			return new LongRun((run) -> {
				await().pollInterval(Duration.ofMillis(5))
					.atMost(Duration.ofSeconds(10))
					.until(() -> !run.lease.isValid());
				run.invalidAt = Instant.now();
			});
		}

		/** Extends the lease, then waits until twice its lease time (1 s) has passed. */
		static LongRun extending() {
			return new LongRun((run) -> {
				long start = System.nanoTime();
				run.extended = run.lease.extend(Duration.ofSeconds(10));
				await().atMost(Duration.ofSeconds(10))
					.until(() -> System.nanoTime() - start > Duration.ofMillis(2000).toNanos());
				run.validLater = run.lease.isValid();
			});
		}

		void run(Lease lease) throws InterruptedException {
			this.lease = lease;
			this.validAtStart = lease.isValid();
			this.body.accept(this);
			this.expired.countDown();
			this.finish.await(20, TimeUnit.SECONDS);
		}

	}

	/** {@link LongJob} with a lockAtMostFor of 1 min, on {@link LateAcquisitions}. */
	static class LateJob {

		private final LongRun run;

		LateJob(LongRun run) {
			this.run = run;
		}

		@SingleInstanceScheduled(fixedDelay = "1h", name = "${job.name}", lockAtMostFor = "1m")
		void run() throws InterruptedException {
			this.run.run(LockContext.requireLease());
		}

	}

	/**
	 * The lock engine on the backend under test, whose drift allowance is the whole time to live
	 * of leases up to a minute: such a lease is never valid here while the backend holds its lock,
	 * as when its acquisition or renewal is held up long in a starved client. A lock kept for an
	 * hour is valid. {@link Late} counts lost leases and can make renewals fail.
	 */
	@Configuration(proxyBeanMethods = false)
	static class LateAcquisitions {

		@Bean
		Late late() {
			return new Late();
		}

		@Bean(destroyMethod = "close")
		DefaultLockTemplate lateTemplate(LockBackend backend, Late late) {
			return new DefaultLockTemplate(new LateBackend(backend, late), LockSettings.defaults(), late);
		}

	}

	/** Counts the late engine's lost leases; fails its renewals when told to. */
	static class Late implements LockListener {

		final AtomicInteger lost = new AtomicInteger();

		volatile boolean failRenewals;

		@Override
		public void leaseLost(String name, String backend) {
			this.lost.incrementAndGet();
		}

	}

	record LateBackend(LockBackend backend, Late late) implements LockBackend, LeaseRenewal {

		@Override
		public String name() {
			return this.backend.name();
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			return this.backend.tryAcquire(key, owner, ttl);
		}

		@Override
		public boolean release(String key, String owner) {
			return this.backend.release(key, owner);
		}

		@Override
		public Set<String> renew(Collection<HeldLock> locks) {
			if (this.late.failRenewals) {
				throw new LockBackendException("the backend is unreachable (test)", null);
			}
			return ((LeaseRenewal) this.backend).renew(locks);
		}

		@Override
		public Duration clockDriftAllowance(Duration ttl) {
			return (ttl.compareTo(Duration.ofMinutes(1)) <= 0) ? ttl : this.backend.clockDriftAllowance(ttl);
		}

	}

	static class LongJob {

		private final LongRun run;

		LongJob(LongRun run) {
			this.run = run;
		}

		@SingleInstanceScheduled(fixedDelay = "1h", name = "${job.name}", lockAtMostFor = "1m")
		void run() throws InterruptedException {
			this.run.run(LockContext.requireLease());
		}

	}

	/** A long run with a lockAtMostFor of 2.5 s. */
	static class CappedJob {

		private final LongRun run;

		CappedJob(LongRun run) {
			this.run = run;
		}

		@SingleInstanceScheduled(fixedDelay = "1h", name = "${job.name}", lockAtMostFor = "2500ms")
		void run() throws InterruptedException {
			this.run.run(LockContext.requireLease());
		}

	}

	/** An every-second cron job kept for lockAtLeastFor (2.5 s); records when each run starts. */
	static class AtLeastJob {

		private final Starts starts;

		AtLeastJob(Starts starts) {
			this.starts = starts;
		}

		@SingleInstanceScheduled(cron = "* * * * * *", zone = "UTC", name = "${job.name}", lockAtLeastFor = "2500ms",
				lockAtMostFor = "1m")
		void run() {
			this.starts.all.add(System.nanoTime());
		}

	}

	static class Starts {

		final List<Long> all = new CopyOnWriteArrayList<>();

	}

	/** The first run lasts {@link KeptRuns#longRun}; the others record their start and return. */
	static class KeptJob {

		private final KeptRuns runs;

		KeptJob(KeptRuns runs) {
			this.runs = runs;
		}

		@SingleInstanceScheduled(fixedRate = "200ms", name = "${job.name}", lockAtMostFor = "1m")
		void run() throws InterruptedException {
			this.runs.run(LockContext.requireLease());
		}

	}

	static class KeptRuns {

		final CountDownLatch longRunStarted = new CountDownLatch(1);

		final CountDownLatch longRunEnded = new CountDownLatch(1);

		final AtomicInteger startsDuringLongRun = new AtomicInteger();

		final AtomicInteger afterEnd = new AtomicInteger();

		private final Duration longRun;

		private final AtomicBoolean first = new AtomicBoolean();

		volatile Lease lease;

		volatile boolean validAtEnd;

		KeptRuns(Duration longRun) {
			this.longRun = longRun;
		}

		void run(Lease lease) throws InterruptedException {
			if (this.first.compareAndSet(false, true)) {
				this.lease = lease;
				this.longRunStarted.countDown();
				Thread.sleep(this.longRun.toMillis());
				this.validAtEnd = lease.isValid();
				this.longRunEnded.countDown();
			}
			else if (this.longRunEnded.getCount() > 0) {
				this.startsDuringLongRun.incrementAndGet();
			}
			else {
				this.afterEnd.incrementAndGet();
			}
		}

	}

}
