package dev.holdfast.core;

import java.time.Clock;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Objects;

import dev.holdfast.LockOptions;
import dev.holdfast.spi.InstanceNames;

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
 * @param showKeyValues whether log lines and exception messages show lock keys as they are, or
 * their key part masked ({@link #masked})
 * @param releaseInBackground whether {@code Lease.close()} returns without waiting for the
 * release's answer where the backend can (Redis on Lettuce; rule REL-2 of docs/DESIGN.md)
 * @param instanceName this process's name in owner tokens and operators' views ({@link InstanceNames})
 */
public record LockSettings(String keyPrefix, Duration waitTime, Duration leaseTime, Duration pollInterval,
		int maxKeyLength, Clock clock, boolean showKeyValues, boolean releaseInBackground, String instanceName) {

	/** Default prefix of every backend key: {@code holdfast:}. */
	public static final String DEFAULT_KEY_PREFIX = "holdfast:";

	/** Default wait time: none, one attempt. */
	public static final Duration DEFAULT_WAIT_TIME = Duration.ZERO;

	/** Default time to live of a lock: 30 seconds. */
	public static final Duration DEFAULT_LEASE_TIME = Duration.ofSeconds(30);

	/** Default longest pause between two attempts of a waiter: 500 milliseconds. */
	public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofMillis(500);

	/** Default longest backend key before it is hashed: 200 characters. */
	public static final int DEFAULT_MAX_KEY_LENGTH = 200;

	public LockSettings {
		Objects.requireNonNull(keyPrefix, "keyPrefix");
		LockOptions.requireLeaseTime(leaseTime, "leaseTime");
		if (Objects.requireNonNull(pollInterval, "pollInterval").isNegative() || pollInterval.isZero()) {
			throw new IllegalArgumentException("pollInterval must be positive, was " + pollInterval);
		}
		if (waitTime.isNegative()) {
			throw new IllegalArgumentException("waitTime must not be negative, was " + waitTime);
		}
		if (maxKeyLength < 64) {
			throw new IllegalArgumentException("maxKeyLength must be at least 64, was " + maxKeyLength);
		}
		InstanceNames.check(instanceName);
	}

	/**
	 * Prefix {@code holdfast:}, wait 0, lease 30s, poll 500ms, keys up to 200 characters, key
	 * values masked in logs and messages, releases in the background.
	 */
	public static LockSettings defaults() {
		return new LockSettings(DEFAULT_KEY_PREFIX, DEFAULT_WAIT_TIME, DEFAULT_LEASE_TIME, DEFAULT_POLL_INTERVAL,
				DEFAULT_MAX_KEY_LENGTH, Clock.systemUTC(), false, true, InstanceNames.defaultName(null));
	}

	public LockSettings withKeyPrefix(String keyPrefix) {
		return new LockSettings(keyPrefix, this.waitTime, this.leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock, this.showKeyValues, this.releaseInBackground, this.instanceName);
	}

	public LockSettings withWaitTime(Duration waitTime) {
		return new LockSettings(this.keyPrefix, waitTime, this.leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock, this.showKeyValues, this.releaseInBackground, this.instanceName);
	}

	public LockSettings withLeaseTime(Duration leaseTime) {
		return new LockSettings(this.keyPrefix, this.waitTime, leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock, this.showKeyValues, this.releaseInBackground, this.instanceName);
	}

	public LockSettings withPollInterval(Duration pollInterval) {
		return new LockSettings(this.keyPrefix, this.waitTime, this.leaseTime, pollInterval, this.maxKeyLength,
				this.clock, this.showKeyValues, this.releaseInBackground, this.instanceName);
	}

	public LockSettings withMaxKeyLength(int maxKeyLength) {
		return new LockSettings(this.keyPrefix, this.waitTime, this.leaseTime, this.pollInterval, maxKeyLength,
				this.clock, this.showKeyValues, this.releaseInBackground, this.instanceName);
	}

	public LockSettings withKeyValuesShown(boolean showKeyValues) {
		return new LockSettings(this.keyPrefix, this.waitTime, this.leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock, showKeyValues, this.releaseInBackground, this.instanceName);
	}

	public LockSettings withReleaseInBackground(boolean releaseInBackground) {
		return new LockSettings(this.keyPrefix, this.waitTime, this.leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock, this.showKeyValues, releaseInBackground, this.instanceName);
	}

	public LockSettings withInstanceName(String instanceName) {
		return new LockSettings(this.keyPrefix, this.waitTime, this.leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock, this.showKeyValues, this.releaseInBackground, instanceName);
	}

	/**
	 * {@code key} as log lines and exception messages show it: as it is if
	 * {@link #showKeyValues()}, else {@linkplain #masked masked} with a fingerprint.
	 */
	public String shown(String key) {
		return this.showKeyValues ? key : masked(key, this.keyPrefix);
	}

	/**
	 * {@code key} with its key part, which comes from method arguments and may hold user data,
	 * masked ({@link LockKeys#mask}) and followed by a 16-bit fingerprint of the whole key,
	 * {@code holdfast:orders:******#3f2a}, equal in every instance and run (rule OBS-5 of
	 * docs/DESIGN.md: it identifies a key, it does not protect a guessable value). A key without
	 * a key part is returned as it is.
	 * @param key a backend key
	 * @param prefix the prefix it was made with
	 */
	public static String masked(String key, String prefix) {
		String masked = LockKeys.mask(key, prefix);
		if (masked.equals(key)) {
			return key;
		}
		return masked + "#" + HexFormat.of().formatHex(LockKeys.sha256(key), 0, 2);
	}

}
