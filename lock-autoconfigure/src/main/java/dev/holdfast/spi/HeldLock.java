package dev.holdfast.spi;

import java.time.Duration;

/**
 * A lock this process holds, as a backend sees it: key, owner token and the time to live to set.
 */
public record HeldLock(String key, String owner, Duration ttl) {
}
