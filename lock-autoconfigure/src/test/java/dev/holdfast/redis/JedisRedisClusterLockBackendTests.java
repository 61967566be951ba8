package dev.holdfast.redis;

import org.springframework.data.redis.connection.RedisConnectionFactory;

/** {@link RedisClusterLockBackendTests} on Jedis cluster connection factories. */
class JedisRedisClusterLockBackendTests extends RedisClusterLockBackendTests {

	@Override
	protected RedisConnectionFactory createFactory() {
		return RedisClients.jedisClusterConnectionFactory(cluster());
	}

}
