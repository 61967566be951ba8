package dev.holdfast.scheduling;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.test.server.RedisServer;

/**
 * Three instances on one real redis-server, each with its own connection factory.
 */
class RedisSingleInstanceClusterTests extends AbstractSingleInstanceClusterTests {

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
	protected void configureBackend(SpringApplicationBuilder builder) {
		builder.sources(AutoConfig.class)
			.properties("spring.data.redis.port=" + redis.port(), "holdfast.backend=redis");
	}

	@Override
	protected String expectedBackend() {
		return "redis";
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataRedisAutoConfiguration.class, HoldfastAutoConfiguration.class })
	static class AutoConfig {

	}

}
