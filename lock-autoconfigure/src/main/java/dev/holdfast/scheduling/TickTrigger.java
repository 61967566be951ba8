package dev.holdfast.scheduling;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ConcurrentLinkedDeque;

import org.jspecify.annotations.Nullable;

import org.springframework.scheduling.Trigger;

/**
 * A trigger of nominal ticks that every instance computes alike, and that remembers the ticks it
 * hands to the scheduler, so that the task can learn which tick it runs for. The scheduler asks
 * for the next time only after the previous run was started, so runs take the ticks in the order
 * they were given. At most {@value #MAX_PENDING} ticks are remembered.
 */
interface TickTrigger extends Trigger {

	/** How many handed-out ticks are remembered at most. */
	int MAX_PENDING = 8;

	/** The nominal fire time of the run that starts now, or {@code null} if unknown. */
	@Nullable Instant takeTick();

	/** The tick after {@code tick}, or {@code null} if there is none. */
	@Nullable Instant nextTick(Instant tick);

	/**
	 * The time from {@code tick} to the next tick, or an hour when there is none: what the
	 * tolerance of a claim and the life of its record are derived from.
	 */
	default Duration gapAfter(Instant tick) {
		Instant next = nextTick(tick);
		return (next != null) ? Duration.between(tick, next) : Duration.ofHours(1);
	}

	/** Ticks handed out and not yet taken, oldest first. */
	final class Pending {

		private final ConcurrentLinkedDeque<Instant> ticks = new ConcurrentLinkedDeque<>();

		@Nullable Instant handOut(@Nullable Instant tick) {
			if (tick != null) {
				this.ticks.addLast(tick);
				while (this.ticks.size() > MAX_PENDING) {
					this.ticks.pollFirst();
				}
			}
			return tick;
		}

		@Nullable Instant take() {
			return this.ticks.pollFirst();
		}

	}

}
