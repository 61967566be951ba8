package dev.holdfast;

import java.time.Instant;

/**
 * A snapshot of a lease this process holds, for operators.
 *
 * @param name the lock name
 * @param key the backend key
 * @param fencingToken the fencing token of the acquisition
 * @param acquiredAt when it was acquired (this JVM's clock)
 * @param expiresAt when it expires unless renewed (this JVM's clock)
 * @param valid whether it is still held for sure
 */
public record LeaseInfo(String name, String key, long fencingToken, Instant acquiredAt, Instant expiresAt,
		boolean valid) {
}
