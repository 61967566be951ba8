package dev.holdfast.autoconfigure;

import java.util.List;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnectionFactory;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.spi.LockBackend;

/**
 * The {@code redis} backend on the application's {@link RedisConnectionFactory}: chosen by
 * {@code holdfast.backend=redis}, or detected when a connection factory bean exists and no
 * Redlock nodes are configured.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass(RedisConnectionFactory.class)
@ConditionalOnBackend(BackendType.REDIS)
@ConditionalOnMissingBean(LockBackend.class)
@EnableConfigurationProperties(HoldfastRedisProperties.class)
class RedisBackendConfiguration {

	@Bean
	RedisLockBackend holdfastLockBackend(ObjectProvider<RedisConnectionFactory> connectionFactories,
			HoldfastRedisProperties properties) {
		RedisConnectionFactory connectionFactory = connectionFactories.getIfUnique();
		if (connectionFactory == null) {
			throw missingConnectionFactory(connectionFactories.stream().toList());
		}
		String channel = properties.getChannel();
		if (channel == null || channel.isBlank()) {
			throw new LockConfigurationException("holdfast.redis.channel is empty",
					"Set holdfast.redis.channel to a channel name, or remove it to use the default '"
							+ RedisLockBackend.DEFAULT_CHANNEL + "'.");
		}
		return RedisLockBackend.of(connectionFactory, channel);
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
