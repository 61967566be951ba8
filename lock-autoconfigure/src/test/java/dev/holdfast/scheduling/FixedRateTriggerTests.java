package dev.holdfast.scheduling;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;

import org.junit.jupiter.api.Test;

import org.springframework.scheduling.support.SimpleTriggerContext;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fixed-rate ticks are {@code initialDelay + k × period} since the epoch, whatever the instant an
 * instance starts, so every instance computes the same ticks.
 */
class FixedRateTriggerTests {

	private static final Instant START = Instant.parse("2030-01-01T10:00:07.300Z");

	@Test
	void ticksAreAlignedToTheEpochWhateverTheStart() {
		FixedRateTrigger trigger = new FixedRateTrigger(Duration.ofSeconds(10), Duration.ZERO);
		assertThat(trigger.nextExecution(context(START))).isEqualTo("2030-01-01T10:00:10Z");
		assertThat(trigger.nextExecution(context(START.plusMillis(2))))
			.as("another instance, started 2 ms later")
			.isEqualTo("2030-01-01T10:00:10Z");
		assertThat(trigger.nextTick(Instant.parse("2030-01-01T10:00:10Z"))).isEqualTo("2030-01-01T10:00:20Z");
	}

	@Test
	void initialDelayIsThePhaseOfTheTicksAndDelaysTheFirstRunOfThisInstance() {
		FixedRateTrigger trigger = new FixedRateTrigger(Duration.ofSeconds(10), Duration.ofSeconds(13));
		// phase 3 s; not before start + 13 s = 10:00:20.3, so 10:00:23
		assertThat(trigger.nextExecution(context(START))).isEqualTo("2030-01-01T10:00:23Z");
	}

	@Test
	void theTicksARunOverranAreSkippedAndTheTicksAreRememberedInOrder() {
		FixedRateTrigger trigger = new FixedRateTrigger(Duration.ofSeconds(1), Duration.ZERO);
		Instant first = trigger.nextExecution(context(START));
		SimpleTriggerContext afterLongRun = context(START);
		afterLongRun.update(first, first, first.plusMillis(2500));
		Instant next = trigger.nextExecution(afterLongRun);
		assertThat(next).isEqualTo("2030-01-01T10:00:11Z");
		assertThat(trigger.takeTick()).isEqualTo(first);
		assertThat(trigger.takeTick()).isEqualTo(next);
		assertThat(trigger.takeTick()).isNull();
	}

	private static SimpleTriggerContext context(Instant now) {
		return new SimpleTriggerContext(Clock.fixed(now, ZoneOffset.UTC));
	}

}
