package dev.holdfast.scheduling;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.test.server.RedisServer;

/**
 * Job leases on one real redis-server, each context with its own connection factory.
 */
class RedisJobLeaseTests extends AbstractJobLeaseTests {

	private static RedisServer redis;

	@BeforeAll
	static void startRedis() {
		redis = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		redis.close();
	}

	@Override
	protected ApplicationContextRunner runner() {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, HoldfastAutoConfiguration.class))
			.withPropertyValues("spring.data.redis.port=" + redis.port(), "holdfast.backend=redis");
	}

	@Override
	protected String expectedBackend() {
		return "redis";
	}

}
