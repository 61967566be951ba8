package dev.holdfast.redis;

import java.time.Duration;
import java.util.List;

import io.lettuce.core.ClientOptions;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.ClusterTopologyRefreshOptions;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;

import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisClientConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.test.server.RedisCluster;
import dev.holdfast.test.server.RedisSentinels;
import dev.holdfast.test.server.RedisServer;

/**
 * Independent clients of a test's Redis, as separate processes would have: each factory has its
 * own connections. Commands time out after two seconds; Lettuce reconnects every 100ms so that
 * restart tests stay short.
 */
final class RedisClients {

	static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(2);

	private static final ClientResources RESOURCES = ClientResources.builder()
		.reconnectDelay(Delay.constant(Duration.ofMillis(100)))
		.build();

	private RedisClients() {
	}

	static LettuceConnectionFactory connectionFactory(RedisServer server) {
		return connectionFactory(server.port());
	}

	/** A factory of a Redis on loopback {@code port} (a proxy in front of a test's server). */
	static LettuceConnectionFactory connectionFactory(int port) {
		LettuceClientConfiguration clientConfiguration = LettuceClientConfiguration.builder()
			.commandTimeout(COMMAND_TIMEOUT)
			.clientResources(RESOURCES)
			.clientOptions(ClientOptions.builder().autoReconnect(true).build())
			.build();
		return start(new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", port),
				clientConfiguration));
	}

	static LettuceConnectionFactory clusterConnectionFactory(RedisServer server) {
		return clusterConnectionFactory(List.of(server.address()));
	}

	/**
	 * A Lettuce cluster factory that follows the cluster's changes as Boot's
	 * {@code spring.data.redis.lettuce.cluster.refresh.adaptive=true} does: on {@code MOVED},
	 * {@code ASK} and reconnections, and every second.
	 */
	static LettuceConnectionFactory clusterConnectionFactory(RedisCluster cluster) {
		return clusterConnectionFactory(cluster.addresses());
	}

	private static LettuceConnectionFactory clusterConnectionFactory(List<String> nodes) {
		ClusterTopologyRefreshOptions refresh = ClusterTopologyRefreshOptions.builder()
			.enableAllAdaptiveRefreshTriggers()
			.enablePeriodicRefresh(Duration.ofSeconds(1))
			.build();
		LettuceClientConfiguration clientConfiguration = LettuceClientConfiguration.builder()
			.commandTimeout(COMMAND_TIMEOUT)
			.clientResources(RESOURCES)
			.clientOptions(ClusterClientOptions.builder().topologyRefreshOptions(refresh).build())
			.build();
		return start(new LettuceConnectionFactory(new RedisClusterConfiguration(nodes), clientConfiguration));
	}

	static LettuceConnectionFactory sentinelConnectionFactory(RedisSentinels sentinels) {
		LettuceClientConfiguration clientConfiguration = LettuceClientConfiguration.builder()
			.commandTimeout(COMMAND_TIMEOUT)
			.clientResources(RESOURCES)
			.build();
		return start(new LettuceConnectionFactory(sentinelConfiguration(sentinels), clientConfiguration));
	}

	static JedisConnectionFactory jedisConnectionFactory(RedisServer server) {
		return start(new JedisConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", server.port()),
				jedisConfiguration()));
	}

	static JedisConnectionFactory jedisClusterConnectionFactory(RedisCluster cluster) {
		return start(new JedisConnectionFactory(new RedisClusterConfiguration(cluster.addresses()),
				jedisConfiguration()));
	}

	static JedisConnectionFactory jedisSentinelConnectionFactory(RedisSentinels sentinels) {
		return start(new JedisConnectionFactory(sentinelConfiguration(sentinels), jedisConfiguration()));
	}

	private static RedisSentinelConfiguration sentinelConfiguration(RedisSentinels sentinels) {
		RedisSentinelConfiguration configuration = new RedisSentinelConfiguration();
		configuration.master(RedisSentinels.MASTER_NAME);
		for (String address : sentinels.sentinelAddresses()) {
			String[] hostPort = address.split(":");
			configuration.sentinel(hostPort[0], Integer.parseInt(hostPort[1]));
		}
		return configuration;
	}

	private static JedisClientConfiguration jedisConfiguration() {
		return JedisClientConfiguration.builder().connectTimeout(COMMAND_TIMEOUT).readTimeout(COMMAND_TIMEOUT).build();
	}

	private static <F extends RedisConnectionFactory> F start(F factory) {
		if (factory instanceof LettuceConnectionFactory lettuce) {
			lettuce.afterPropertiesSet();
			lettuce.start();
		}
		else if (factory instanceof JedisConnectionFactory jedis) {
			jedis.afterPropertiesSet();
			jedis.start();
		}
		return factory;
	}

	static StringRedisTemplate template(RedisConnectionFactory factory) {
		StringRedisTemplate template = new StringRedisTemplate(factory);
		template.afterPropertiesSet();
		return template;
	}

}
