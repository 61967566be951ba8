package dev.holdfast.core;

import java.time.Clock;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Objects;

import dev.holdfast.LockOptions;

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
 * @param showKeyValues whether log lines and exception messages show lock keys as they are;
 * otherwise their key part, which comes from method arguments and may hold user data, is masked
 * and the key fingerprinted ({@link #masked})
 * @param releaseInBackground whether {@code Lease.close()} sends the release and returns without
 * waiting for the backend's answer, where the backend can release without blocking (Redis on
 * Lettuce); the template still orders a later acquisition of the same key from this process
 * after that release (see {@link DefaultLockTemplate})
 */
public record LockSettings(String keyPrefix, Duration waitTime, Duration leaseTime, Duration pollInterval,
		int maxKeyLength, Clock clock, boolean showKeyValues, boolean releaseInBackground) {

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
	}

	/**
	 * Prefix {@code holdfast:}, wait 0, lease 30s, poll 500ms, keys up to 200 characters, key
	 * values masked in logs and messages, releases in the background.
	 */
	public static LockSettings defaults() {
		return new LockSettings(DEFAULT_KEY_PREFIX, DEFAULT_WAIT_TIME, DEFAULT_LEASE_TIME, DEFAULT_POLL_INTERVAL,
				DEFAULT_MAX_KEY_LENGTH, Clock.systemUTC(), false, true);
	}

	public LockSettings withKeyPrefix(String keyPrefix) {
		return new LockSettings(keyPrefix, this.waitTime, this.leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock, this.showKeyValues, this.releaseInBackground);
	}

	public LockSettings withWaitTime(Duration waitTime) {
		return new LockSettings(this.keyPrefix, waitTime, this.leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock, this.showKeyValues, this.releaseInBackground);
	}

	public LockSettings withLeaseTime(Duration leaseTime) {
		return new LockSettings(this.keyPrefix, this.waitTime, leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock, this.showKeyValues, this.releaseInBackground);
	}

	public LockSettings withPollInterval(Duration pollInterval) {
		return new LockSettings(this.keyPrefix, this.waitTime, this.leaseTime, pollInterval, this.maxKeyLength,
				this.clock, this.showKeyValues, this.releaseInBackground);
	}

	public LockSettings withMaxKeyLength(int maxKeyLength) {
		return new LockSettings(this.keyPrefix, this.waitTime, this.leaseTime, this.pollInterval, maxKeyLength,
				this.clock, this.showKeyValues, this.releaseInBackground);
	}

	public LockSettings withKeyValuesShown(boolean showKeyValues) {
		return new LockSettings(this.keyPrefix, this.waitTime, this.leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock, showKeyValues, this.releaseInBackground);
	}

	public LockSettings withReleaseInBackground(boolean releaseInBackground) {
		return new LockSettings(this.keyPrefix, this.waitTime, this.leaseTime, this.pollInterval, this.maxKeyLength,
				this.clock, this.showKeyValues, releaseInBackground);
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
	 * masked ({@link LockKeys#mask}) and followed by a fingerprint of the whole key:
	 * {@code holdfast:orders:******#3f2a}. Equal keys have the same fingerprint in every instance
	 * and every run, and keys that differ almost always differ in it (16 bits), so two masked
	 * keys can be told apart, and a log line matched to an entry of the {@code locks} endpoint of
	 * any instance. The fingerprint identifies a key; it does not protect a guessable value:
	 * hashing candidates finds a key part taken from a small set (a flag, one of a few tenants),
	 * and narrows a guess from a larger set 65,536-fold. A key without a key part is returned as
	 * it is.
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
