package dev.holdfast.redis;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.LockBackendContractTests;
import dev.holdfast.test.server.RedisServer;

/**
 * The backend contract on a real Redis through a pooled Lettuce connection factory (Spring Boot
 * pools when commons-pool2 is on the classpath). Every backend has its own client, as another
 * process would.
 */
class RedisPooledContractTests extends LockBackendContractTests {

	private static RedisServer server;

	// The suite closes backends after each test; their connection factories close with the class,
	// after every release has gone through.
	private static final List<LettuceConnectionFactory> factories = new ArrayList<>();

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		factories.forEach(LettuceConnectionFactory::destroy);
		factories.clear();
		server.close();
	}

	@Override
	protected LockBackend newBackend() {
		LettuceConnectionFactory factory = RedisTestClients.pooledConnectionFactory(server);
		factories.add(factory);
		return RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
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
