package dev.holdfast.spi;

import java.time.Duration;

/**
 * A backend that keeps waiters in a queue of its own, so that a waiter wakes when its turn comes
 * instead of retrying: ZooKeeper's sequential nodes, where each waiter watches only the one
 * before it. The engine hands such a backend the whole wait of one acquisition; a backend
 * without it is retried by the engine after release events or pauses.
 */
public interface WaitQueue {

	/**
	 * Takes the lock, waiting in the backend's queue for at most {@code maxWait}. With a zero
	 * {@code maxWait} this is one attempt, as {@link LockBackend#tryAcquire} is. A waiter that
	 * gives up, is interrupted or fails leaves nothing in the queue.
	 * @param key the full backend key
	 * @param owner a token unique to this acquisition
	 * @param ttl how long the lock lives unless renewed, counted from the request that confirmed
	 * the hold
	 * @param maxWait how long to wait for the holder and the waiters ahead
	 * @return the outcome and, when acquired, when the confirming request was sent
	 * @throws InterruptedException if the calling thread was interrupted while waiting
	 * @throws dev.holdfast.LockBackendException when the backend cannot be reached
	 */
	Outcome acquire(String key, String owner, Duration ttl, Duration maxWait) throws InterruptedException;

	/**
	 * The outcome of a queued acquisition.
	 *
	 * @param result whether the lock was acquired, with its fencing token
	 * @param confirmedNanos when acquired: {@link System#nanoTime()} when the request that
	 * confirmed the hold was sent, from which the lock's time to live runs; a hold confirmed
	 * after waiting lives {@code ttl} from the end of the wait, not from its start
	 */
	record Outcome(AcquireResult result, long confirmedNanos) {
	}

}
