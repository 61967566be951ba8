package dev.holdfast;

import java.time.Duration;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * Options of one acquisition. Unset values take the configured defaults
 * ({@code holdfast.wait-time}, {@code holdfast.lease-time}).
 */
public final class LockOptions {

	/** The shortest lease time: one millisecond. */
	public static final Duration MIN_LEASE_TIME = Duration.ofMillis(1);

	private static final LockOptions DEFAULTS = new LockOptions(null, null, true, LockMode.WRITE);

	private final @Nullable Duration waitTime;

	private final @Nullable Duration leaseTime;

	private final boolean renew;

	private final LockMode mode;

	private LockOptions(@Nullable Duration waitTime, @Nullable Duration leaseTime, boolean renew, LockMode mode) {
		this.waitTime = waitTime;
		this.leaseTime = leaseTime;
		this.renew = renew;
		this.mode = mode;
	}

	/** Options that take every configured default, with renewal on. */
	public static LockOptions defaults() {
		return DEFAULTS;
	}

	/** How long to wait for a held lock; zero means one attempt. */
	public LockOptions waitTime(Duration waitTime) {
		requireNotNegative(waitTime, "waitTime");
		return new LockOptions(waitTime, this.leaseTime, this.renew, this.mode);
	}

	/**
	 * Time to live of the lock on the backend, at least {@link #MIN_LEASE_TIME}.
	 * @throws IllegalArgumentException if it is shorter
	 */
	public LockOptions leaseTime(Duration leaseTime) {
		return new LockOptions(this.waitTime, requireLeaseTime(leaseTime, "leaseTime"), this.renew, this.mode);
	}

	/**
	 * Returns {@code leaseTime} if it is at least {@link #MIN_LEASE_TIME}: backends count time to
	 * live in milliseconds, and a shorter one would be a lock that expires as it is taken.
	 * @param name what the value is called where it came from, for the message
	 * @throws IllegalArgumentException naming {@code name} otherwise
	 */
	public static Duration requireLeaseTime(Duration leaseTime, String name) {
		Objects.requireNonNull(leaseTime, () -> name + " must not be null");
		if (leaseTime.compareTo(MIN_LEASE_TIME) < 0) {
			throw new IllegalArgumentException(name + " must be at least 1ms (backends count a lease in"
					+ " milliseconds; a shorter one would expire as it is taken), was " + leaseTime);
		}
		return leaseTime;
	}

	/**
	 * Whether the lease is renewed while held. Off, the lock expires after the lease time even if
	 * the holder still runs.
	 */
	public LockOptions renew(boolean renew) {
		return new LockOptions(this.waitTime, this.leaseTime, renew, this.mode);
	}

	/**
	 * Whether it takes the exclusive lock ({@link LockMode#WRITE}, the default) or a read hold
	 * beside other readers ({@link LockMode#READ}, on a backend that gives them).
	 */
	public LockOptions mode(LockMode mode) {
		Objects.requireNonNull(mode, "mode must not be null");
		return new LockOptions(this.waitTime, this.leaseTime, this.renew, mode);
	}

	public LockMode getMode() {
		return this.mode;
	}

	public @Nullable Duration getWaitTime() {
		return this.waitTime;
	}

	public @Nullable Duration getLeaseTime() {
		return this.leaseTime;
	}

	public boolean isRenew() {
		return this.renew;
	}

	private static void requireNotNegative(Duration duration, String name) {
		Objects.requireNonNull(duration, name + " must not be null");
		if (duration.isNegative()) {
			throw new IllegalArgumentException(name + " must not be negative, was " + duration);
		}
	}

	@Override
	public boolean equals(Object other) {
		return other instanceof LockOptions o && Objects.equals(this.waitTime, o.waitTime)
				&& Objects.equals(this.leaseTime, o.leaseTime) && this.renew == o.renew && this.mode == o.mode;
	}

	@Override
	public int hashCode() {
		return Objects.hash(this.waitTime, this.leaseTime, this.renew, this.mode);
	}

	@Override
	public String toString() {
		return "LockOptions[waitTime=" + this.waitTime + ", leaseTime=" + this.leaseTime + ", renew=" + this.renew
				+ ", mode=" + this.mode + "]";
	}

}
