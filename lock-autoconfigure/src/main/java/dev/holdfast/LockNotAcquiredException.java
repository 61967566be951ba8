package dev.holdfast;

import java.time.Duration;

/**
 * The lock is held by another owner and did not become free within the wait time.
 */
public class LockNotAcquiredException extends LockException {

	private final String lockKey;

	private final Duration waitTime;

	public LockNotAcquiredException(String lockKey, Duration waitTime) {
		this(lockKey, lockKey, waitTime);
	}

	/**
	 * @param lockKey the backend key of the lock
	 * @param shownKey the key as the message shows it: with its key part masked unless
	 * {@code holdfast.show-key-values} is on
	 * @param waitTime how long the caller waited
	 */
	public LockNotAcquiredException(String lockKey, String shownKey, Duration waitTime) {
		this(lockKey, waitTime, "Lock '" + shownKey + "' is held by another owner and was not released within "
				+ waitTime);
	}

	/** For a subclass with a message of its own. */
	protected LockNotAcquiredException(String lockKey, Duration waitTime, String message) {
		super(message, null);
		this.lockKey = lockKey;
		this.waitTime = waitTime;
	}

	/** The backend key of the lock, as it is (the message may show it masked). */
	public String getLockKey() {
		return this.lockKey;
	}

	/** How long the caller waited. */
	public Duration getWaitTime() {
		return this.waitTime;
	}

}
