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

	/** By the {@code backend} tag: the default backend's type (its {@code name()}), a named backend's name. */
	private final Map<String, TickClock> tickClocks;

	/**
	 * The gauge of the default backend's tick clock alone, tagged {@code backend=default}.
	 */
	public TickClockMetrics(TickClock tickClock) {
		this("default", tickClock, Map.of());
	}

	/**
	 * @param defaultBackend the default backend's name ({@code LockBackend.name()}), its tag
	 * @param tickClock the default backend's tick clock
	 * @param named the tick clock of each named backend ({@code holdfast.backends.<name>}), by name
	 * @throws IllegalArgumentException when {@code defaultBackend} is also a named backend's name:
	 * their gauges would be one
	 */
	public TickClockMetrics(String defaultBackend, TickClock tickClock, Map<String, TickClock> named) {
		if (named.containsKey(defaultBackend)) {
			throw new IllegalArgumentException("The default backend's name '" + defaultBackend
					+ "' (its LockBackend's name()) is also the named backend holdfast.backends." + defaultBackend
					+ ": their meters, tagged backend=" + defaultBackend + ", would be one. Rename the named backend,"
					+ " or give the default LockBackend bean another name()");
		}
		this.tickClocks = new TreeMap<>(named);
		this.tickClocks.put(defaultBackend, tickClock);
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
