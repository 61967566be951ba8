package dev.holdfast.redis;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.core.LockBackendContractTests;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.testsupport.RedisServer;

/**
 * The backend contract on a real Redis. Every backend has its own Lettuce client, as another
 * process would.
 */
class RedisLockBackendContractTests extends LockBackendContractTests {

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
		LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
		factories.add(factory);
		return RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
	}

}
