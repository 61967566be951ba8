package dev.holdfast.redis;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;

import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.LeadershipContractTests;
import dev.holdfast.test.LockBackendContractTests;
import dev.holdfast.test.server.RedisServer;

/** The backend contract on a standalone Redis through Jedis connection factories. */
class JedisRedisContractTests extends LockBackendContractTests implements LeadershipContractTests {

	private static RedisServer server;

	private static final List<JedisConnectionFactory> factories = new ArrayList<>();

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		factories.forEach(JedisConnectionFactory::destroy);
		factories.clear();
		server.close();
	}

	@Override
	protected LockBackend newBackend() {
		JedisConnectionFactory factory = RedisTestClients.jedisConnectionFactory(server);
		factories.add(factory);
		return RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
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
