package dev.holdfast.scheduling;

import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.concurrent.ConcurrentLinkedDeque;

import org.jspecify.annotations.Nullable;

import org.springframework.scheduling.TriggerContext;
import org.springframework.scheduling.support.CronExpression;
import org.springframework.scheduling.support.CronTrigger;

/**
 * A {@link CronTrigger} that remembers the nominal fire times it hands to the scheduler, so that
 * the task can learn which tick it runs for. The scheduler asks for the next time only after the
 * previous run was started, so runs take the times in the order they were given. At most
 * {@value #MAX_PENDING} times are remembered.
 */
final class TickCronTrigger extends CronTrigger {

	private static final int MAX_PENDING = 8;

	private final CronExpression expression;

	private final ZoneId zone;

	private final ConcurrentLinkedDeque<Instant> pending = new ConcurrentLinkedDeque<>();

	TickCronTrigger(String expression, ZoneId zone) {
		super(expression, zone);
		this.expression = CronExpression.parse(expression);
		this.zone = zone;
	}

	@Override
	public @Nullable Instant nextExecution(TriggerContext triggerContext) {
		Instant next = super.nextExecution(triggerContext);
		if (next != null) {
			this.pending.addLast(next);
			while (this.pending.size() > MAX_PENDING) {
				this.pending.pollFirst();
			}
		}
		return next;
	}

	/** The nominal fire time of the run that starts now, or {@code null} if unknown. */
	@Nullable Instant takeTick() {
		return this.pending.pollFirst();
	}

	/** The tick after {@code tick}, or {@code null} if the expression has no further tick. */
	@Nullable Instant nextTick(Instant tick) {
		ZonedDateTime next = this.expression.next(tick.atZone(this.zone));
		return (next != null) ? next.toInstant() : null;
	}

}
