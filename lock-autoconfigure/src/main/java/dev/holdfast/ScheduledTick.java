package dev.holdfast;

import java.time.Instant;
import java.util.Optional;

import dev.holdfast.core.ThreadBindings;

/**
 * The tick that the current thread runs, inside a cron or fixed-rate
 * {@link dev.holdfast.SingleInstanceScheduled} method: the nominal fire time derived from the cron
 * expression (or {@code initialDelay + k × fixedRate} since the epoch), the same on every instance,
 * whatever the time the run actually started. Useful to process exactly the period that ended at
 * the tick.
 */
public final class ScheduledTick {

	private ScheduledTick() {
	}

	/**
	 * The nominal fire time of the tick running on this thread; empty outside a cron or
	 * fixed-rate {@code @SingleInstanceScheduled} method (fixed-delay jobs have no ticks).
	 */
	public static Optional<Instant> current() {
		return Optional.ofNullable(ThreadBindings.currentTick());
	}

}
