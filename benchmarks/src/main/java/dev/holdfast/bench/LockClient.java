package dev.holdfast.bench;

/**
 * One contender as the uncontended benchmarks drive it: one operation is one acquisition and one
 * release of a free lock. Implementations fail loudly when the lock is not acquired, so that a
 * broken contender cannot look fast.
 */
public interface LockClient extends AutoCloseable {

	/** Acquires {@code key} (which is free), then releases it. */
	void lockUnlock(String key) throws Exception;

	/** Acquires {@code key}, waiting as long as it takes, and returns what releases it. */
	default Held lock(String key) throws Exception {
		throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot wait for a lock");
	}

	/**
	 * One attempt to acquire {@code key} without waiting (the busy-{@code tryAcquire} scenario
	 * retries it at once): what releases the lock, or {@code null} if it is held.
	 */
	default Held tryLock(String key) throws Exception {
		throw new UnsupportedOperationException(getClass().getSimpleName() + " has no single attempt");
	}

	@Override
	default void close() throws Exception {
	}

	/** A held lock. */
	@FunctionalInterface
	interface Held {

		void release() throws Exception;

	}

}
