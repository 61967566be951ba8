package dev.holdfast.autoconfigure;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Configuration of the {@code redis} backend. The connection itself is Spring Boot's
 * ({@code spring.data.redis.*}).
 */
@ConfigurationProperties("holdfast.redis")
public class HoldfastRedisProperties {

	/**
	 * Pub/sub channel on which releases are announced so that waiters wake at once. Every
	 * instance that shares the locks must use the same channel. Defaults to the key prefix
	 * followed by "released" (holdfast:released with the default prefix, and with an empty one),
	 * so that applications with different key prefixes on one Redis do not wake each other.
	 */
	private @Nullable String channel;

	/**
	 * Number of replicas that must have received an acquisition (Redis WAIT) before it counts;
	 * fewer within replica-ack-timeout releases the lock and fails the acquisition. Protects
	 * against a failover to a replica that never received the lock. 0 waits for none.
	 * Standalone and Sentinel only, not Redis Cluster.
	 */
	private int replicasToAck;

	/**
	 * How long an acquisition waits for replicas-to-ack replicas; must be below the command
	 * timeout (spring.data.redis.timeout). The default suits a command timeout of 1s or more.
	 */
	private Duration replicaAckTimeout = Duration.ofMillis(500);

	public int getReplicasToAck() {
		return this.replicasToAck;
	}

	public void setReplicasToAck(int replicasToAck) {
		this.replicasToAck = replicasToAck;
	}

	public Duration getReplicaAckTimeout() {
		return this.replicaAckTimeout;
	}

	public void setReplicaAckTimeout(Duration replicaAckTimeout) {
		this.replicaAckTimeout = replicaAckTimeout;
	}

	public @Nullable String getChannel() {
		return this.channel;
	}

	public void setChannel(@Nullable String channel) {
		this.channel = channel;
	}

}
