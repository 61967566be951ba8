package dev.holdfast.redis;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

import dev.holdfast.LockBackendException;

/**
 * How many replicas must acknowledge an acquisition before it counts, and how long to wait
 * for them: after the acquire script, the backend sends {@code WAIT replicas timeout} on the
 * connection that wrote the lock. If fewer replicas acknowledged it in time, it releases the
 * lock (not a read hold, which may be one from before: its owner releases it) and fails with
 * {@link LockBackendException} (fail closed): a failover to a replica
 * that never received the lock then cannot let a second holder in. Renewals and releases are
 * not awaited. Redis answers nothing else on a connection while its {@code WAIT} runs, so
 * on Lettuce the acquisitions and their {@code WAIT}s run on at most four connections that
 * the backend opens for them from the factory's client and closes with itself, never on the
 * connection the factory shares with the application; a Jedis connection is the caller's
 * alone anyway. Not on Redis Cluster, where
 * the connection that wrote the lock is not the application's to send {@code WAIT} on.
 * @param replicas replicas that must acknowledge; 0 waits for none
 * @param timeout how long {@code WAIT} waits; at least 1 ms when replicas are awaited, and
 * below the connection factory's command timeout
 */
public record ReplicaAcks(int replicas, Duration timeout) {

	/** Waits for no replica. */
	public static final ReplicaAcks NONE = new ReplicaAcks(0, Duration.ZERO);

	public ReplicaAcks {
		Assert.notNull(timeout, "'timeout' must not be null");
		if (replicas < 0) {
			throw new IllegalArgumentException("Replicas to acknowledge must be 0 or more, was " + replicas);
		}
		if (replicas > 0 && timeout.toMillis() < 1) {
			throw new IllegalArgumentException("Replica acknowledgement timeout must be at least 1ms, was " + timeout);
		}
	}

	/** The failure of an acquisition that fewer replicas acknowledged, with what became of its lock. */
	LockBackendException shortfall(String key, long acknowledged, @Nullable Boolean released) {
		String release = (released == null) ? "could not release it, it expires after its ttl"
				: released ? "released it" : "it was gone already";
		return shortfall(key, acknowledged, release);
	}

	/** The failure of a read hold that fewer replicas acknowledged: not released, its caller releases it (RWL-28). */
	LockBackendException shortfall(String key, long acknowledged) {
		return shortfall(key, acknowledged, "the read hold is not released (it may be one from before), its owner's "
				+ "release or ttl ends it");
	}

	private LockBackendException shortfall(String key, long acknowledged, String release) {
		return new LockBackendException("Redis acquire of lock '" + key + "': " + Math.max(acknowledged, 0)
				+ " of " + this.replicas + " replica(s) acknowledged it within " + this.timeout.toMillis()
				+ "ms (holdfast.redis.replicas-to-ack); " + release, null);
	}

}
