package dev.holdfast.scheduling;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ApplicationContext;

import dev.holdfast.ScheduledTick;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.actuate.LockBackendHealthIndicator;
import dev.holdfast.actuate.LockMetricsListener;
import dev.holdfast.actuate.TickClockMetrics;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims.TickClaim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * An instance whose clock is off the backend's by more than the tolerance runs no ticks, says so
 * once at WARN with the offset, shows it in a gauge and the health details, counts its skips as
 * {@code clock-off}, and runs ticks again once the clocks agree. The backend is the memory
 * backend on a clock the test moves; the instance runs on the JVM's clock.
 */
@ExtendWith(OutputCaptureExtension.class)
class TickClockTests {

	private final MovableClock backendClock = new MovableClock();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class))
		.withBean("sharedBackend", LockBackend.class, () -> new InMemoryLockBackend(this.backendClock))
		.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
		.withBean(EverySecond.class);

	@Test
	void anInstanceWhoseClockIsOffRunsNothingSaysSoOnceAndRunsAgainWhenItAgrees(CapturedOutput output) {
		this.backendClock.offset = Duration.ofMillis(2500);
		this.runner.run((context) -> {
			EverySecond job = context.getBean(EverySecond.class);
			TickClock clock = context.getBean(SingleInstanceScheduledBeanPostProcessor.class).tickClock();
			await().atMost(Duration.ofSeconds(10)).until(() -> skipped(context, "clock-off") >= 3);
			assertThat(job.ticks).as("ticks run while the clock is off").isEmpty();
			assertThat(output).containsOnlyOnce("Holdfast job 'every-second' runs no ticks on this instance: its clock is ")
				.contains("ms behind the memory backend's clock, beyond the tolerance of 250 ms");
			assertThat(clock.refusedJobs()).containsOnlyKeys("every-second");
			assertThat(clock.offset()).get()
				.satisfies((offset) -> assertThat(offset.plusMillis(2500).abs()).isLessThan(Duration.ofMillis(200)));
			// Boot binds MeterBinder beans to its registry; this test has none of Boot's metrics
			context.getBean(TickClockMetrics.class).bindTo(context.getBean(MeterRegistry.class));
			assertThat(context.getBean(MeterRegistry.class).get(TickClockMetrics.OFFSET).gauge().value())
				.isCloseTo(-2.5, org.assertj.core.data.Offset.offset(0.2));
			Health health = context.getBean(LockBackendHealthIndicator.class).health(true);
			assertThat(health.getDetails()).containsKey("clockOffset").containsKey("jobsRefusedForClock");
			assertThat(health.getDetails().get("jobsRefusedForClock")).asString().startsWith("{every-second=");
			this.backendClock.offset = Duration.ZERO;
			await().atMost(Duration.ofSeconds(10)).until(() -> job.ticks.size() >= 2);
			assertThat(output).contains("Holdfast job 'every-second' runs ticks again on this instance");
			assertThat(clock.refusedJobs()).isEmpty();
			assertThat(context.getBean(LockBackendHealthIndicator.class).health(true).getDetails())
				.doesNotContainKey("jobsRefusedForClock");
		});
	}

	@Test
	void aTickClaimedLateIsDroppedAsLateWhenTheClocksAgree(CapturedOutput output) {
		// the backend is 400 ms behind: within the tolerance as a clock offset (250 ms is the
		// tolerance of a 1 s job: no), so move it by 200 ms and claim late instead
		this.backendClock.offset = Duration.ofMillis(200);
		this.runner.run((context) -> {
			await().atMost(Duration.ofSeconds(10)).until(() -> context.getBean(EverySecond.class).ticks.size() >= 2);
			assertThat(context.getBean(SingleInstanceScheduledBeanPostProcessor.class).tickClock().refusedJobs())
				.isEmpty();
			assertThat(skipped(context, "clock-off")).isZero();
		});
	}

	@Test
	void aSlowClaimIsNotAClockOffset() {
		// the backend's clock is the instance's; its answer takes 600 ms, spent before it reads
		// its clock (a request that waits for a connection) or after (a delayed reply), so its time
		// is 300 ms off the midpoint of the round trip, one way or the other
		assertSlowClaimReportsNoOffset(new SlowClaims(Duration.ofMillis(600), Duration.ZERO));
		assertSlowClaimReportsNoOffset(new SlowClaims(Duration.ZERO, Duration.ofMillis(600)));
	}

	@Test
	void theOffsetIsHowFarTheBackendsTimeLiesOutsideTheRoundTrip() {
		Instant sent = Instant.parse("2026-01-01T00:00:00Z");
		Instant received = sent.plusMillis(600);
		assertThat(TickClock.offset(sent, sent.plusMillis(600), received)).isZero();
		assertThat(TickClock.offset(sent, sent, received)).isZero();
		assertThat(TickClock.offset(sent, sent.minusMillis(2500), received)).isEqualTo(Duration.ofMillis(2500));
		assertThat(TickClock.offset(sent, received.plusMillis(2500), received)).isEqualTo(Duration.ofMillis(-2500));
	}

	private void assertSlowClaimReportsNoOffset(SlowClaims backend) {
		new ApplicationContextRunner()
			.withConfiguration(
					AutoConfigurations.of(HoldfastAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class))
			.withBean("sharedBackend", LockBackend.class, () -> backend)
			.withBean(EverySecond.class)
			.run((context) -> {
				TickClock clock = context.getBean(SingleInstanceScheduledBeanPostProcessor.class).tickClock();
				await().atMost(Duration.ofSeconds(10)).until(() -> backend.claims.get() >= 2);
				assertThat(clock.offset()).contains(Duration.ZERO);
				assertThat(context.getBean(LockBackendHealthIndicator.class).health(true).getDetails())
					.containsEntry("clockOffset", "0ms")
					.doesNotContainKey("jobsRefusedForClock");
			});
	}

	private static double skipped(ApplicationContext context, String reason) {
		Counter counter = context.getBean(MeterRegistry.class)
			.find(LockMetricsListener.SKIPPED)
			.tags("name", "every-second", "reason", reason)
			.counter();
		return (counter != null) ? counter.count() : 0;
	}

	static class EverySecond {

		final CopyOnWriteArrayList<Instant> ticks = new CopyOnWriteArrayList<>();

		@SingleInstanceScheduled(cron = "* * * * * *", name = "every-second", zone = "UTC")
		void run() {
			this.ticks.add(ScheduledTick.current().orElseThrow());
		}

	}

	/** The memory backend on the JVM's clock, whose tick claims take their time. */
	static final class SlowClaims extends InMemoryLockBackend {

		final AtomicInteger claims = new AtomicInteger();

		private final Duration beforeReading;

		private final Duration afterReading;

		SlowClaims(Duration beforeReading, Duration afterReading) {
			this.beforeReading = beforeReading;
			this.afterReading = afterReading;
		}

		@Override
		public TickClaim claimTick(String key, Instant tick, Duration tolerance, Duration ttl) {
			sleep(this.beforeReading);
			TickClaim claim = super.claimTick(key, tick, tolerance, ttl);
			sleep(this.afterReading);
			this.claims.incrementAndGet();
			return claim;
		}

		private static void sleep(Duration duration) {
			try {
				Thread.sleep(duration.toMillis());
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}

	}

	/** The JVM's clock plus an offset that the test changes. */
	static final class MovableClock extends Clock {

		volatile Duration offset = Duration.ZERO;

		@Override
		public ZoneId getZone() {
			return ZoneOffset.UTC;
		}

		@Override
		public Clock withZone(ZoneId zone) {
			throw new AssertionError("TickClock must not change the zone of the clock it reads");
		}

		@Override
		public Instant instant() {
			return Instant.now().plus(this.offset);
		}

	}

}
