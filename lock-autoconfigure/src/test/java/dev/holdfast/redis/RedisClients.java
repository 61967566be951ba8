package dev.holdfast.redis;

import java.time.Duration;
import java.util.List;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;

import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.testsupport.RedisServer;

/**
 * Independent Lettuce clients of a test's Redis, as separate processes would have: each factory
 * has its own connections. Commands time out after two seconds; reconnection is retried every
 * 100ms so that restart tests stay short.
 */
final class RedisClients {

	static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(2);

	private static final ClientResources RESOURCES = ClientResources.builder()
		.reconnectDelay(Delay.constant(Duration.ofMillis(100)))
		.build();

	private RedisClients() {
	}

	static LettuceConnectionFactory connectionFactory(RedisServer server) {
		LettuceClientConfiguration clientConfiguration = LettuceClientConfiguration.builder()
			.commandTimeout(COMMAND_TIMEOUT)
			.clientResources(RESOURCES)
			.clientOptions(ClientOptions.builder().autoReconnect(true).build())
			.build();
		LettuceConnectionFactory factory = new LettuceConnectionFactory(
				new RedisStandaloneConfiguration("127.0.0.1", server.port()), clientConfiguration);
		factory.afterPropertiesSet();
		factory.start();
		return factory;
	}

	static LettuceConnectionFactory clusterConnectionFactory(RedisServer server) {
		LettuceClientConfiguration clientConfiguration = LettuceClientConfiguration.builder()
			.commandTimeout(COMMAND_TIMEOUT)
			.clientResources(RESOURCES)
			.build();
		LettuceConnectionFactory factory = new LettuceConnectionFactory(
				new RedisClusterConfiguration(List.of("127.0.0.1:" + server.port())), clientConfiguration);
		factory.afterPropertiesSet();
		factory.start();
		return factory;
	}

	static StringRedisTemplate template(LettuceConnectionFactory factory) {
		StringRedisTemplate template = new StringRedisTemplate(factory);
		template.afterPropertiesSet();
		return template;
	}

}
