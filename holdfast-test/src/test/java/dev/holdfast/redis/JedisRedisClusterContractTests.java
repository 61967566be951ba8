package dev.holdfast.redis;

import org.springframework.data.redis.connection.RedisConnectionFactory;

import dev.holdfast.test.server.RedisCluster;

/**
 * The backend contract on a 3-primary Redis Cluster through Jedis cluster connection factories,
 * whose connections cannot pipeline.
 */
class JedisRedisClusterContractTests extends RedisClusterContractTests {

	@Override
	protected RedisConnectionFactory createFactory(RedisCluster cluster) {
		return RedisTestClients.jedisClusterConnectionFactory(cluster);
	}

}
