package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.boot.data.redis.autoconfigure.ClientResourcesBuilderCustomizer;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.util.ClassUtils;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.redis.ReplicaAcks;
import dev.holdfast.spi.LockBackend;

/**
 * The {@code redis} backend on the application's {@link RedisConnectionFactory}: chosen by
 * {@code holdfast.backend=redis}, or detected when a connection factory bean exists and no
 * Redlock nodes are configured.
 * <p>
 * With Spring Boot's Lettuce client, Holdfast also caps Lettuce's reconnect back-off (see
 * {@link LettuceReconnectConfiguration}).
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(RedisConnectionFactory.class)
@ConditionalOnBackend(BackendType.REDIS)
@ConditionalOnMissingBean(LockBackend.class)
@EnableConfigurationProperties({ HoldfastProperties.class, HoldfastRedisProperties.class })
class RedisBackendConfiguration {

	private static final boolean LETTUCE_PRESENT = ClassUtils.isPresent("io.lettuce.core.RedisClient",
			RedisBackendConfiguration.class.getClassLoader());

	private static final boolean JEDIS_PRESENT = ClassUtils.isPresent("redis.clients.jedis.Jedis",
			RedisBackendConfiguration.class.getClassLoader());

	@Bean
	RedisLockBackend holdfastLockBackend(ObjectProvider<RedisConnectionFactory> connectionFactories,
			HoldfastRedisProperties properties, HoldfastProperties holdfast) {
		RedisConnectionFactory connectionFactory = connectionFactories.getIfUnique();
		if (connectionFactory == null) {
			throw missingConnectionFactory(connectionFactories.stream().toList());
		}
		return backend(connectionFactory, properties, holdfast.getKeyPrefix());
	}

	/** The redis backend of {@code holdfast.backends.<name>}, built as the default one. */
	static RedisLockBackend named(NamedBackend named) {
		return backend(named.client(RedisConnectionFactory.class), named.settings(HoldfastRedisProperties.class),
				named.keyPrefix());
	}

	private static RedisLockBackend backend(RedisConnectionFactory connectionFactory,
			HoldfastRedisProperties properties, String keyPrefix) {
		String channel = properties.getChannel();
		if (channel == null) {
			channel = channel(keyPrefix);
		}
		else if (channel.isBlank()) {
			throw new LockConfigurationException("holdfast.redis.channel is empty",
					"Set holdfast.redis.channel to a channel name, or remove it to use the default '"
							+ channel(keyPrefix) + "' (the key prefix followed by 'released').");
		}
		return RedisLockBackend.of(connectionFactory, channel, replicaAcks(properties, connectionFactory));
	}

	/**
	 * The release channel of the locks under {@code keyPrefix}: applications with different
	 * prefixes on one Redis share no locks, so they need not hear each other's releases.
	 */
	static String channel(String keyPrefix) {
		return keyPrefix.isEmpty() ? RedisLockBackend.DEFAULT_CHANNEL : keyPrefix + "released";
	}

	private static ReplicaAcks replicaAcks(HoldfastRedisProperties properties,
			RedisConnectionFactory connectionFactory) {
		int replicas = properties.getReplicasToAck();
		if (replicas == 0) {
			return ReplicaAcks.NONE;
		}
		if (replicas < 0) {
			throw new LockConfigurationException("holdfast.redis.replicas-to-ack is " + replicas,
					"Set holdfast.redis.replicas-to-ack to 0 (wait for no replica) or to the number of replicas "
							+ "that must have each acquisition.");
		}
		Duration timeout = properties.getReplicaAckTimeout();
		if (timeout == null || timeout.toMillis() < 1) {
			throw new LockConfigurationException("holdfast.redis.replica-ack-timeout is " + timeout,
					"Set holdfast.redis.replica-ack-timeout to at least 1ms, below spring.data.redis.timeout.");
		}
		if (isCluster(connectionFactory)) {
			throw new LockConfigurationException(
					"holdfast.redis.replicas-to-ack is " + replicas + ", but the RedisConnectionFactory is for Redis "
							+ "Cluster, where an acquisition's replicas cannot be awaited",
					"Set holdfast.redis.replicas-to-ack to 0, or keep the locks on a standalone or Sentinel-managed "
							+ "Redis.");
		}
		if (LETTUCE_PRESENT && connectionFactory instanceof LettuceConnectionFactory lettuce
				&& timeout.toMillis() >= lettuce.getTimeout()) {
			throw new LockConfigurationException(
					"holdfast.redis.replica-ack-timeout (" + timeout.toMillis()
							+ "ms) is not below the Redis command timeout (" + lettuce.getTimeout() + "ms)",
					"Lower holdfast.redis.replica-ack-timeout, or raise spring.data.redis.timeout.");
		}
		return new ReplicaAcks(replicas, timeout);
	}

	private static boolean isCluster(RedisConnectionFactory connectionFactory) {
		if (LETTUCE_PRESENT && connectionFactory instanceof LettuceConnectionFactory lettuce) {
			return lettuce.isClusterAware();
		}
		if (JEDIS_PRESENT && connectionFactory instanceof JedisConnectionFactory jedis) {
			return jedis.isRedisClusterAware();
		}
		return false;
	}

	/**
	 * Caps the delay between Lettuce's reconnect attempts at {@link #RECONNECT_DELAY_MAX}, with
	 * jitter. Lettuce's default doubles the delay up to 30 s: after a 9 s outage the next attempt
	 * came up to ~7 s after Redis was back, and every lock call failed meanwhile (each after the
	 * full command timeout). A capped delay brings the first acquisition within
	 * {@code RECONNECT_DELAY_MAX} plus a connect of Redis coming back. Applies to Boot's
	 * {@code ClientResources}, which the application's other Redis connections share; ordered
	 * first, so that an application's own {@link ClientResourcesBuilderCustomizer} that sets a
	 * reconnect delay wins. An application that builds its own {@code ClientResources} sets the
	 * delay there.
	 */
	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass({ ClientResources.class, ClientResourcesBuilderCustomizer.class })
	static class LettuceReconnectConfiguration {

		/** The longest pause between two reconnect attempts of Lettuce. */
		static final Duration RECONNECT_DELAY_MAX = Duration.ofMillis(500);

		@Bean
		@Order(Ordered.HIGHEST_PRECEDENCE)
		ClientResourcesBuilderCustomizer holdfastLettuceReconnectDelay() {
			return (builder) -> builder
				.reconnectDelay(Delay.equalJitter(Duration.ofMillis(1), RECONNECT_DELAY_MAX, 2, TimeUnit.MILLISECONDS));
		}

	}

	private static LockConfigurationException missingConnectionFactory(List<RedisConnectionFactory> found) {
		if (!found.isEmpty()) {
			return new LockConfigurationException(
					"holdfast.backend=redis found " + found.size()
							+ " RedisConnectionFactory beans and cannot tell which one keeps the locks",
					"Mark the RedisConnectionFactory to use @Primary, or define a RedisLockBackend bean on it.");
		}
		return new LockConfigurationException(
				"holdfast.backend=redis is set, but there is no RedisConnectionFactory bean to keep the locks in",
				"Add spring-boot-starter-data-redis and point spring.data.redis.* (host, port or url) at your "
						+ "Redis, define a RedisConnectionFactory bean, or choose another holdfast.backend "
						+ "(redlock, jdbc, memory).");
	}

}
