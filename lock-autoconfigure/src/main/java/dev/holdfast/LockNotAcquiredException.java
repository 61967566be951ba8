package dev.holdfast;

import java.time.Duration;

/**
 * The lock is held by another owner and did not become free within the wait time.
 */
public class LockNotAcquiredException extends LockException {

	private final String lockKey;

	private final Duration waitTime;

	public LockNotAcquiredException(String lockKey, Duration waitTime) {
		super("Lock '" + lockKey + "' is held by another owner and was not released within " + waitTime, null);
		this.lockKey = lockKey;
		this.waitTime = waitTime;
	}

	/** The backend key of the lock. */
	public String getLockKey() {
		return this.lockKey;
	}

	/** How long the caller waited. */
	public Duration getWaitTime() {
		return this.waitTime;
	}

}
