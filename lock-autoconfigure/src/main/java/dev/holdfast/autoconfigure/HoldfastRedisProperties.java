package dev.holdfast.autoconfigure;

import org.springframework.boot.context.properties.ConfigurationProperties;

import dev.holdfast.redis.RedisLockBackend;

/**
 * Configuration of the {@code redis} backend. The connection itself is Spring Boot's
 * ({@code spring.data.redis.*}).
 */
@ConfigurationProperties("holdfast.redis")
public class HoldfastRedisProperties {

	/**
	 * Pub/sub channel on which releases are announced so that waiters wake at once. Every
	 * instance that shares the locks must use the same channel.
	 */
	private String channel = RedisLockBackend.DEFAULT_CHANNEL;

	public String getChannel() {
		return this.channel;
	}

	public void setChannel(String channel) {
		this.channel = channel;
	}

}
