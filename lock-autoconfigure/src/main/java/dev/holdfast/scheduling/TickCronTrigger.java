package dev.holdfast.scheduling;

import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;

import org.jspecify.annotations.Nullable;

import org.springframework.scheduling.TriggerContext;
import org.springframework.scheduling.support.CronExpression;
import org.springframework.scheduling.support.CronTrigger;

/**
 * The ticks of a cron expression in one zone: a {@link CronTrigger}, so that Spring lists the
 * job as a cron task, that remembers the ticks it hands out ({@link TickTrigger}).
 */
final class TickCronTrigger extends CronTrigger implements TickTrigger {

	private final CronExpression expression;

	private final ZoneId zone;

	private final Pending pending = new Pending();

	TickCronTrigger(String expression, ZoneId zone) {
		super(expression, zone);
		this.expression = CronExpression.parse(expression);
		this.zone = zone;
	}

	@Override
	public @Nullable Instant nextExecution(TriggerContext triggerContext) {
		return this.pending.handOut(super.nextExecution(triggerContext));
	}

	@Override
	public @Nullable Instant takeTick() {
		return this.pending.take();
	}

	@Override
	public @Nullable Instant nextTick(Instant tick) {
		ZonedDateTime next = this.expression.next(tick.atZone(this.zone));
		return (next != null) ? next.toInstant() : null;
	}

}
