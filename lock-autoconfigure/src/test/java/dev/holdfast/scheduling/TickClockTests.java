package dev.holdfast.scheduling;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;

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
