package dev.holdfast.scheduling;

import java.time.Duration;
import java.time.Instant;

import org.jspecify.annotations.Nullable;

import org.springframework.scheduling.TriggerContext;

/**
 * The ticks of a fixed-rate job: the instants {@code initialDelay + k × period} since the epoch,
 * the same on every instance whenever it started. An instance takes part from
 * {@code initialDelay} after it scheduled the job. A run that overruns the next ticks skips
 * them (as cron jobs do): the next run is at the first tick after it ended.
 */
final class FixedRateTrigger implements TickTrigger {

	private final long periodMillis;

	private final long phaseMillis;

	private final Duration initialDelay;

	private final Pending pending = new Pending();

	FixedRateTrigger(Duration period, Duration initialDelay) {
		this.periodMillis = Math.max(1, period.toMillis());
		this.phaseMillis = Math.floorMod(initialDelay.toMillis(), this.periodMillis);
		this.initialDelay = initialDelay;
	}

	@Override
	public Instant nextExecution(TriggerContext context) {
		Instant after;
		Instant completed = context.lastCompletion();
		if (completed == null) {
			after = context.getClock().instant().plus(this.initialDelay).minusMillis(1);
		}
		else {
			Instant scheduled = context.lastScheduledExecution();
			after = (scheduled != null && completed.isBefore(scheduled)) ? scheduled : completed;
		}
		return this.pending.handOut(tickAfter(after));
	}

	/** The first tick strictly after {@code instant}. */
	Instant tickAfter(Instant instant) {
		long millis = instant.toEpochMilli();
		long k = Math.floorDiv(millis - this.phaseMillis, this.periodMillis) + 1;
		return Instant.ofEpochMilli(k * this.periodMillis + this.phaseMillis);
	}

	@Override
	public @Nullable Instant takeTick() {
		return this.pending.take();
	}

	@Override
	public Instant nextTick(Instant tick) {
		return tick.plusMillis(this.periodMillis);
	}

	@Override
	public String toString() {
		return "fixed rate " + Duration.ofMillis(this.periodMillis) + " from the epoch + "
				+ Duration.ofMillis(this.phaseMillis);
	}

}
