package dev.holdfast.redis;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterAll;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.data.redis.connection.RedisConnectionFactory;

import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.ClusterLocksContractTests;
import dev.holdfast.test.LeadershipContractTests;
import dev.holdfast.test.LockBackendContractTests;
import dev.holdfast.test.server.RedisCluster;

/**
 * The backend contract on a real Redis Cluster of 3 primaries with one replica each
 * ({@link RedisCluster#shared()}, started once per JVM), through Lettuce cluster connection
 * factories; {@link JedisRedisClusterContractTests} runs it through Jedis.
 */
class RedisClusterContractTests extends LockBackendContractTests
		implements ClusterLocksContractTests, LeadershipContractTests {

	// The suite closes backends after each test; their connection factories close with the class,
	// after every release has gone through.
	private static final List<RedisConnectionFactory> factories = new ArrayList<>();

	@AfterAll
	static void closeFactories() throws Exception {
		for (RedisConnectionFactory factory : factories) {
			((DisposableBean) factory).destroy();
		}
		factories.clear();
	}

	/** A new connection factory of the client library under test. */
	protected RedisConnectionFactory createFactory(RedisCluster cluster) {
		return RedisTestClients.clusterConnectionFactory(cluster);
	}

	@Override
	protected RedisLockBackend newBackend() {
		RedisConnectionFactory factory = createFactory(RedisCluster.shared());
		factories.add(factory);
		return RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
	}

	@Override
	public LockBackend newClusterClient() {
		return trackBackend(newBackend());
	}

	@Override
	public LockBackend newLeadershipClient() {
		return trackBackend(newBackend());
	}

	@Override
	public boolean followersWakeOnReleases() {
		return false;
	}

	/** No SharedLocks on this branch: READ is refused naming the backend (RWL-9); true once it gives read holds. */
	@Override
	public boolean expectsReadHolds() {
		return true;
	}

	@Override
	public boolean wakesOnAnotherSlotsRelease() {
		return true;
	}

}
