package dev.holdfast.scheduling;

import java.time.Instant;
import java.util.Optional;

/**
 * The tick that the current thread runs, inside a cron {@link dev.holdfast.SingleInstanceScheduled}
 * method: the nominal fire time derived from the cron expression, the same on every instance,
 * whatever the time the run actually started. Useful to process exactly the period that ended at
 * the tick.
 */
public final class ScheduledTick {

	private static final ThreadLocal<Instant> CURRENT = new ThreadLocal<>();

	private ScheduledTick() {
	}

	/**
	 * The nominal fire time of the cron tick running on this thread; empty outside a cron
	 * {@code @SingleInstanceScheduled} method.
	 */
	public static Optional<Instant> current() {
		return Optional.ofNullable(CURRENT.get());
	}

	static void run(Instant tick, Runnable action) {
		CURRENT.set(tick);
		try {
			action.run();
		}
		finally {
			CURRENT.remove();
		}
	}

}
