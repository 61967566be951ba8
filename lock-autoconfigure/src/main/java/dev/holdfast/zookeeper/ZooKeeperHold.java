package dev.holdfast.zookeeper;

import java.util.concurrent.TimeUnit;

/**
 * A lock node of this process: the key it locks, its path, and when its time to live was last
 * set, so that a lock nobody renews or releases any more can be swept.
 */
final class ZooKeeperHold {

	final String key;

	final String path;

	/** When the request that last set the node's time to live was sent, System.nanoTime. */
	volatile long confirmedNanos;

	volatile long ttlNanos;

	ZooKeeperHold(String key, String path, long confirmedNanos, long ttlNanos) {
		this.key = key;
		this.path = path;
		this.confirmedNanos = confirmedNanos;
		this.ttlNanos = ttlNanos;
	}

	void confirmed(long startNanos, long ttl) {
		this.confirmedNanos = startNanos;
		this.ttlNanos = ttl;
	}

	/** Expired by a wide margin on this JVM's clock: nobody renews or releases it any more. */
	boolean forgotten(long now) {
		long ttl = this.ttlNanos;
		return now - this.confirmedNanos - ttl - Math.max(TimeUnit.SECONDS.toNanos(1), ttl / 10) > 0;
	}

}
