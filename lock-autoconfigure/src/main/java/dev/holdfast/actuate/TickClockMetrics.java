package dev.holdfast.actuate;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

import dev.holdfast.scheduling.TickClock;

/**
 * The gauge {@value #OFFSET}: how far this instance's clock is from the lock backend's, in
 * seconds (positive when this instance is ahead), as the last claim of a scheduled tick measured
 * it beyond the claim's round trip; {@code NaN} before the first claim and on backends without
 * tick records.
 */
public class TickClockMetrics implements MeterBinder {

	/** Gauge of the clock offset. */
	public static final String OFFSET = "holdfast.scheduling.clock.offset";

	private final TickClock tickClock;

	public TickClockMetrics(TickClock tickClock) {
		this.tickClock = tickClock;
	}

	@Override
	public void bindTo(MeterRegistry registry) {
		Gauge.builder(OFFSET, this.tickClock,
				(clock) -> clock.offset().map((offset) -> offset.toNanos() / 1e9).orElse(Double.NaN))
			.description("Offset of this instance's clock from the lock backend's, measured by tick claims")
			.baseUnit("seconds")
			.register(registry);
	}

}
