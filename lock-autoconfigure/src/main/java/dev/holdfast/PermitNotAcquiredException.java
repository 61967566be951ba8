package dev.holdfast;

import java.time.Duration;

/**
 * Every permit of the semaphore is held by another owner, and none became free within the wait
 * time. A {@link LockNotAcquiredException}, so that code catching that catches this too.
 */
public class PermitNotAcquiredException extends LockNotAcquiredException {

	private final int permits;

	/**
	 * @param semaphoreKey the backend key of the semaphore (its permits are that key, then
	 * {@code #<slot>})
	 * @param shownKey the key as the message shows it: with its key part masked unless
	 * {@code holdfast.show-key-values} is on
	 * @param permits how many permits the semaphore has
	 * @param waitTime how long the caller waited
	 */
	public PermitNotAcquiredException(String semaphoreKey, String shownKey, int permits, Duration waitTime) {
		this(semaphoreKey, shownKey, permits, waitTime, false);
	}

	/**
	 * @param nested whether the caller runs under a permit of the same semaphore (a nested call)
	 * @see #PermitNotAcquiredException(String, String, int, Duration)
	 */
	public PermitNotAcquiredException(String semaphoreKey, String shownKey, int permits, Duration waitTime,
			boolean nested) {
		super(semaphoreKey, waitTime, "Semaphore '" + shownKey + "' has all its " + permits + " permits held by "
				+ (nested ? "other calls or the one this call runs in" : "other owners") + ", and none was released within "
				+ waitTime + (nested ? ": permits are not reentrant, so a nested call waits for another permit. Take "
						+ "the permit once, in the outer call, or give the semaphore more permits" : ""));
		this.permits = permits;
	}

	/** How many permits the semaphore has. */
	public int getPermits() {
		return this.permits;
	}

}
