package dev.holdfast.core;

import java.time.Duration;

/**
 * Receives what a {@link DefaultLockTemplate} does, for metrics and tracing. Methods are called
 * on the thread doing the work and must not block. {@code name} is the lock name without its key:
 * bounded cardinality.
 */
public interface LockListener {

	/** A lock was acquired after {@code waited}. */
	default void acquired(String name, String backend, Duration waited) {
	}

	/** The lock stayed held by another owner for the whole wait time. */
	default void notAcquired(String name, String backend, Duration waited) {
	}

	/** The backend failed; the caller gets a {@link dev.holdfast.LockBackendException}. */
	default void failed(String name, String backend, Duration waited, RuntimeException ex) {
	}

	/** A lease was released after being held for {@code held}. */
	default void released(String name, String backend, Duration held) {
	}

	/** A held lease could not be renewed and is no longer owned by this process. */
	default void leaseLost(String name, String backend) {
	}

	/**
	 * A run of the scheduled job {@code name} was skipped because its lock was held: another
	 * instance ran that tick, or the job still runs (or keeps its lock) elsewhere.
	 */
	default void tickSkipped(String name, String backend) {
	}

	/** A listener that does nothing. */
	LockListener NONE = new LockListener() {
	};

}
