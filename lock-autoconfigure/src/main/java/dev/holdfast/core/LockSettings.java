package dev.holdfast.core;

import java.time.Clock;
import java.time.Duration;
import java.util.Objects;

/**
 * Defaults and tuning of a {@link DefaultLockTemplate}.
 *
 * @param keyPrefix prefix of every backend key
 * @param waitTime how long to wait for a held lock when the caller does not say
 * @param leaseTime time to live of a lock when the caller does not say
 * @param pollInterval the longest pause between two attempts of a waiter; with a backend that
 * sends release events this is only the fallback when an event is lost
 * @param maxKeyLength backend keys longer than this are shortened with a SHA-256 hash
 * @param clock wall clock for {@code acquiredAt}/{@code expiresAt}, for display only
 */
public record LockSettings(String keyPrefix, Duration waitTime, Duration leaseTime, Duration pollInterval,
		int maxKeyLength, Clock clock) {

	public LockSettings {
		Objects.requireNonNull(keyPrefix, "keyPrefix");
		requirePositive(leaseTime, "leaseTime");
		requirePositive(pollInterval, "pollInterval");
		if (waitTime.isNegative()) {
			throw new IllegalArgumentException("waitTime must not be negative, was " + waitTime);
		}
		if (maxKeyLength < 64) {
			throw new IllegalArgumentException("maxKeyLength must be at least 64, was " + maxKeyLength);
		}
	}

	/** Prefix {@code holdfast:}, wait 0, lease 30s, poll 500ms, keys up to 200 characters. */
	public static LockSettings defaults() {
		return new LockSettings("holdfast:", Duration.ZERO, Duration.ofSeconds(30), Duration.ofMillis(500), 200,
				Clock.systemUTC());
	}

	public LockSettings withKeyPrefix(String keyPrefix) {
		return new LockSettings(keyPrefix, this.waitTime, this.leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock);
	}

	public LockSettings withWaitTime(Duration waitTime) {
		return new LockSettings(this.keyPrefix, waitTime, this.leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock);
	}

	public LockSettings withLeaseTime(Duration leaseTime) {
		return new LockSettings(this.keyPrefix, this.waitTime, leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock);
	}

	public LockSettings withPollInterval(Duration pollInterval) {
		return new LockSettings(this.keyPrefix, this.waitTime, this.leaseTime, pollInterval, this.maxKeyLength,
				this.clock);
	}

	public LockSettings withMaxKeyLength(int maxKeyLength) {
		return new LockSettings(this.keyPrefix, this.waitTime, this.leaseTime, this.pollInterval, maxKeyLength,
				this.clock);
	}

	public LockSettings withClock(Clock clock) {
		return new LockSettings(this.keyPrefix, this.waitTime, this.leaseTime, this.pollInterval, this.maxKeyLength,
				clock);
	}

	private static void requirePositive(Duration duration, String name) {
		Objects.requireNonNull(duration, name);
		if (duration.isNegative() || duration.isZero()) {
			throw new IllegalArgumentException(name + " must be positive, was " + duration);
		}
	}

}
