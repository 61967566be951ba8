package dev.holdfast.semaphore;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.server.RedisServer;

/**
 * A waiting permit call on a real Redis, each template with a connection factory of its own. Redis
 * announces a release only to a waiter it recorded (RED-4): a permit call waits on one slot per
 * round (SEM-7), so only the figures are taken here.
 */
class RedisPermitWakeTests extends AbstractPermitWakeTests {

	private static final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private static RedisServer server;

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		factories.forEach(LettuceConnectionFactory::destroy);
		server.close();
	}

	/** Every attempt is one script call; so are the holder's few acquisitions and renewals. */
	@Override
	protected long attempts() {
		String calls = server.info("commandstats", "cmdstat_evalsha");
		return (calls != null) ? Long.parseLong(calls.replaceAll("^calls=([0-9]+),.*$", "$1")) : 0;
	}

	@Override
	protected LockBackend newBackend() {
		LettuceConnectionFactory factory = new LettuceConnectionFactory(
				new RedisStandaloneConfiguration("127.0.0.1", server.port()));
		factory.start();
		factories.add(factory);
		return RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
	}

}
