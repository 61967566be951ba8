package dev.holdfast.spi;

import java.time.Duration;
import java.time.Instant;

/**
 * A backend that records which tick of a scheduled job was claimed last, in one entry per job.
 * Optional: without it, the scheduler claims every tick as a lock of its own, which costs one
 * lock (and, where the backend keeps one, one fencing counter) per tick until it expires.
 */
public interface TickClaims {

	/**
	 * Claims {@code tick} of the job whose lock is at {@code key}, unless that tick or a later one
	 * was claimed already: the last claimed tick is stored beside the lock, at a key that no lock
	 * can use, and only ever moves forward, in one atomic step. The record expires {@code ttl}
	 * after a successful claim; a failed claim changes nothing.
	 * @param key the job's lock key
	 * @param tick the nominal fire time of the tick, in milliseconds
	 * @param ttl how long the record of this claim lives
	 * @return whether this call claimed the tick; for one tick, at most one call in the cluster
	 * gets {@code true} while the record lives
	 * @throws dev.holdfast.LockBackendException when the backend cannot be reached; the claim may
	 * or may not have been recorded then
	 */
	boolean claimTick(String key, Instant tick, Duration ttl);

}
