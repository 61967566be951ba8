package dev.holdfast;

/**
 * The thread was interrupted while waiting for a lock. No lease is left behind, and the thread's
 * interrupt flag is set again.
 */
public class LockInterruptedException extends LockException {

	/**
	 * @param lockKey the backend key of the lock, as the message shows it (masked unless
	 * {@code holdfast.show-key-values} is on)
	 */
	public LockInterruptedException(String lockKey, InterruptedException cause) {
		super("Interrupted while waiting for lock '" + lockKey + "'", cause);
	}

}
