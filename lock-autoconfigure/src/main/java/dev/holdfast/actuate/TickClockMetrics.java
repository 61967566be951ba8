package dev.holdfast.actuate;

import java.util.Map;
import java.util.TreeMap;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.MeterBinder;

import dev.holdfast.scheduling.TickClock;

/**
 * The gauge {@value #OFFSET}, one per backend (tag {@code backend}): how far this instance's
 * clock is from that lock backend's, in seconds (positive when this instance is ahead), as the
 * last claim of a scheduled tick on it measured it beyond the claim's round trip; {@code NaN}
 * before the first claim and on backends without tick records.
 */
public class TickClockMetrics implements MeterBinder {

	/** Gauge of the clock offset. */
	public static final String OFFSET = "holdfast.scheduling.clock.offset";

	private final Map<String, TickClock> tickClocks;

	/**
	 * @param tickClocks the tick clock of each backend, by its {@code backend} tag: the default
	 * backend's type, a named backend's name
	 */
	public TickClockMetrics(Map<String, TickClock> tickClocks) {
		this.tickClocks = new TreeMap<>(tickClocks);
	}

	@Override
	public void bindTo(MeterRegistry registry) {
		this.tickClocks.forEach((backend, tickClock) -> Gauge
			.builder(OFFSET, tickClock,
					(clock) -> clock.offset().map((offset) -> offset.toNanos() / 1e9).orElse(Double.NaN))
			.description("Offset of this instance's clock from the lock backend's, measured by tick claims")
			.tag("backend", backend)
			.baseUnit("seconds")
			.register(registry));
	}

}
