package dev.holdfast.redis;

import org.springframework.data.redis.connection.RedisConnectionFactory;

/** {@link RedisClusterLockBackendTests} on Lettuce cluster connection factories. */
class LettuceRedisClusterLockBackendTests extends RedisClusterLockBackendTests {

	@Override
	protected RedisConnectionFactory createFactory() {
		return RedisClients.clusterConnectionFactory(cluster());
	}

}
