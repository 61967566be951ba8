package dev.holdfast.bench;

import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;

/**
 * An application's own use of Redis at startup, for {@link StartupCost}'s second comparison: once
 * its beans exist it sends one {@code PING} over the connection factory, as an application that
 * reads or writes Redis at startup (sessions, a cache warm-up) opens its connection. Added to both
 * sides of that comparison with {@code spring.main.sources}, so that what it costs is the
 * application's, not Holdfast's.
 */
@Configuration(proxyBeanMethods = false)
public class StartupRedisUse {

	@Bean
	SmartInitializingSingleton startupRedisPing(RedisConnectionFactory connectionFactory) {
		return new Ping(connectionFactory);
	}

	static final class Ping implements SmartInitializingSingleton {

		private final RedisConnectionFactory connectionFactory;

		Ping(RedisConnectionFactory connectionFactory) {
			this.connectionFactory = connectionFactory;
		}

		@Override
		public void afterSingletonsInstantiated() {
			try (RedisConnection connection = this.connectionFactory.getConnection()) {
				connection.ping();
			}
		}

	}

}
