package dev.holdfast.redlock;

import java.time.Duration;

/**
 * Timing of the Redlock algorithm, and the channel of its release events.
 *
 * @param nodeTimeout how long one request to one node may take; a node that has not answered by
 * then counts as failed for that request, so no single slow or paused node can hold up a caller
 * for longer
 * @param driftFactor the fraction of a lock's time to live that is set aside for the clocks of
 * client and nodes running at different rates
 * @param minDrift the fixed part of the drift allowance, added to {@code ttl * driftFactor}
 * @param releaseChannel the channel on every node on which a release publishes
 * {@code "<key> <owner>"}; every process that shares the locks must use the same one
 */
public record RedlockSettings(Duration nodeTimeout, double driftFactor, Duration minDrift, String releaseChannel) {

	/** The release channel unless another one is given. */
	public static final String DEFAULT_RELEASE_CHANNEL = "holdfast:redlock:released";

	/** Settings that publish releases on {@value #DEFAULT_RELEASE_CHANNEL}. */
	public RedlockSettings(Duration nodeTimeout, double driftFactor, Duration minDrift) {
		this(nodeTimeout, driftFactor, minDrift, DEFAULT_RELEASE_CHANNEL);
	}

	/**
	 * Validates the settings.
	 * @throws IllegalArgumentException naming the setting that is out of range
	 */
	public RedlockSettings {
		if (nodeTimeout.isNegative() || nodeTimeout.isZero()) {
			throw new IllegalArgumentException("nodeTimeout must be positive, was " + nodeTimeout);
		}
		if (!(driftFactor >= 0 && driftFactor < 0.5)) {
			throw new IllegalArgumentException("driftFactor must be at least 0 and below 0.5, was " + driftFactor);
		}
		if (minDrift.isNegative()) {
			throw new IllegalArgumentException("minDrift must not be negative, was " + minDrift);
		}
		if (releaseChannel.isBlank()) {
			throw new IllegalArgumentException("releaseChannel must not be empty");
		}
	}

	/** These settings with another release channel. */
	public RedlockSettings withReleaseChannel(String releaseChannel) {
		return new RedlockSettings(this.nodeTimeout, this.driftFactor, this.minDrift, releaseChannel);
	}

	/** A 200 ms node timeout, a drift of 1% of the time to live plus 2 ms, the default channel. */
	public static RedlockSettings defaults() {
		return new RedlockSettings(Duration.ofMillis(200), 0.01, Duration.ofMillis(2));
	}

	/** The drift allowance for a lock of the given time to live, in nanoseconds. */
	long driftNanos(Duration ttl) {
		return (long) (ttl.toNanos() * this.driftFactor) + this.minDrift.toNanos();
	}

}
