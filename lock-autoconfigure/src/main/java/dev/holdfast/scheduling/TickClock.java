package dev.holdfast.scheduling;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

/**
 * How far this instance's clock is from the lock backend's, as measured by the claims of
 * scheduled ticks, and which jobs run no ticks here because of it. A claim tells the backend's
 * time, read at some moment of the round trip. The offset is this instance's clock (the
 * scheduler's) less the backend's, positive when this instance is ahead, and only what the clocks
 * are known to differ by: how far the backend's time lies outside the round trip, zero when it
 * lies within. A slow round trip (a first connection, a loaded host) is not an offset.
 * <p>
 * A job whose claim the backend refused as not due while the offset exceeded the claim's
 * tolerance is <em>refused for its clock</em>: it is logged once at WARN with the offset, and at
 * INFO once its claims are judged on time again. Exposed as the gauge
 * {@code holdfast.scheduling.clock.offset} and in the {@code holdfast} health details.
 */
public final class TickClock {

	private static final Log logger = LogFactory.getLog(TickClock.class);

	/** Jobs refused for their clock, with the offset measured then; bounded by the jobs. */
	private final Map<String, Duration> refused = new ConcurrentHashMap<>();

	private volatile @Nullable Duration offset;

	/**
	 * The offset of this instance's clock from the backend's measured by the last claim: positive
	 * when this instance is ahead; empty before the first claim, and on backends that keep no tick
	 * records.
	 */
	public Optional<Duration> offset() {
		return Optional.ofNullable(this.offset);
	}

	/** The jobs that run no ticks on this instance because its clock is off, with their offsets. */
	public Map<String, Duration> refusedJobs() {
		return new TreeMap<>(this.refused);
	}

	/**
	 * The offset that a claim sent at {@code sent} and answered at {@code received} (this
	 * instance's clock), which the backend decided at {@code backendTime} (its clock), shows:
	 * zero when the backend's time lies within the round trip, else how far it lies before the
	 * request was sent (this instance ahead) or after the answer came (behind).
	 */
	static Duration offset(Instant sent, Instant backendTime, Instant received) {
		if (backendTime.isBefore(sent)) {
			return Duration.between(backendTime, sent);
		}
		if (backendTime.isAfter(received)) {
			return Duration.between(backendTime, received);
		}
		return Duration.ZERO;
	}

	/** Records the offset a claim measured, in any outcome. */
	void measured(Duration offset) {
		this.offset = offset;
	}

	/**
	 * The backend refused a claim of {@code job} as not due while this instance's clock was off
	 * by more than {@code tolerance}: WARN when the job was running ticks until now.
	 */
	void refused(String job, Duration offset, Duration tolerance, String backend) {
		if (this.refused.put(job, offset) == null) {
			logger.warn("Holdfast job '" + job + "' runs no ticks on this instance: its clock is "
					+ describe(offset) + " the " + backend + " backend's clock, beyond the tolerance of "
					+ tolerance.toMillis() + " ms, so the backend refuses its claims. Other instances run the ticks; "
					+ "this one runs them again once the clocks agree. Synchronise this host's clock (NTP).");
		}
	}

	/** A claim of {@code job} was judged on time: INFO if the job was refused for its clock. */
	void agreed(String job, Duration offset, String backend) {
		if (this.refused.remove(job) != null) {
			logger.info("Holdfast job '" + job + "' runs ticks again on this instance: its clock is " + describe(offset)
					+ " the " + backend + " backend's clock, within the tolerance");
		}
	}

	static String describe(Duration offset) {
		long millis = offset.toMillis();
		return (millis >= 0) ? millis + " ms ahead of" : -millis + " ms behind";
	}

}
