package dev.holdfast.redis;

import java.time.Duration;

import org.apache.commons.pool2.impl.GenericObjectPoolConfig;

import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisClientConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettucePoolingClientConfiguration;

import dev.holdfast.test.server.RedisCluster;
import dev.holdfast.test.server.RedisServer;

/**
 * Independent Lettuce or Jedis clients of a test's Redis, as separate processes would have: each
 * factory has its own connections. Commands time out after two seconds.
 */
final class RedisTestClients {

	private static final Duration TIMEOUT = Duration.ofSeconds(2);

	private RedisTestClients() {
	}

	static LettuceConnectionFactory connectionFactory(RedisServer server) {
		return started(new RedisStandaloneConfiguration("127.0.0.1", server.port()));
	}

	static LettuceConnectionFactory clusterConnectionFactory(RedisCluster cluster) {
		return started(new RedisClusterConfiguration(cluster.addresses()));
	}

	static JedisConnectionFactory jedisConnectionFactory(RedisServer server) {
		return started(new JedisConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", server.port()),
				jedisConfiguration()));
	}

	static JedisConnectionFactory jedisClusterConnectionFactory(RedisCluster cluster) {
		return started(new JedisConnectionFactory(new RedisClusterConfiguration(cluster.addresses()),
				jedisConfiguration()));
	}

	private static JedisClientConfiguration jedisConfiguration() {
		return JedisClientConfiguration.builder().connectTimeout(TIMEOUT).readTimeout(TIMEOUT).build();
	}

	private static JedisConnectionFactory started(JedisConnectionFactory factory) {
		factory.afterPropertiesSet();
		factory.start();
		return factory;
	}

	/**
	 * A factory with Lettuce pooling, as Spring Boot configures one when commons-pool2 is on the
	 * classpath: the shared native connection for most commands, pooled connections for the rest
	 * (the release subscription among them).
	 */
	static LettuceConnectionFactory pooledConnectionFactory(RedisServer server) {
		return started(new RedisStandaloneConfiguration("127.0.0.1", server.port()), LettucePoolingClientConfiguration
			.builder()
			.commandTimeout(Duration.ofSeconds(2))
			.poolConfig(new GenericObjectPoolConfig<>())
			.build());
	}

	private static LettuceConnectionFactory started(RedisConfiguration configuration) {
		return started(configuration,
				LettuceClientConfiguration.builder().commandTimeout(TIMEOUT).build());
	}

	private static LettuceConnectionFactory started(RedisConfiguration configuration,
			LettuceClientConfiguration clientConfiguration) {
		LettuceConnectionFactory factory = new LettuceConnectionFactory(configuration, clientConfiguration);
		factory.afterPropertiesSet();
		factory.start();
		return factory;
	}

}
