package dev.holdfast.spi;

/**
 * The outcome of one acquisition attempt.
 *
 * @param acquired whether the lock is now held by the caller
 * @param fencingToken the fencing token of the acquisition, when acquired
 * @param holderRemainingMillis when not acquired: how long the current holder's lock lives at
 * most, or {@code -1} when the backend does not say
 */
public record AcquireResult(boolean acquired, long fencingToken, long holderRemainingMillis) {

	public static AcquireResult acquired(long fencingToken) {
		return new AcquireResult(true, fencingToken, -1);
	}

	public static AcquireResult held(long holderRemainingMillis) {
		return new AcquireResult(false, 0, holderRemainingMillis);
	}

}
