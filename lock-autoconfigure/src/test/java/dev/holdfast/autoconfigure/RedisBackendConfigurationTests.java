package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.UUID;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnectionFactory;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.testsupport.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;

class RedisBackendConfigurationTests {

	private static RedisServer server;

	private final ApplicationContextRunner contextRunner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class))
		.withUserConfiguration(RedisBackendConfiguration.class);

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		server.close();
	}

	@Test
	void redisBackendKeepsLocksInTheApplicationsRedis() {
		this.contextRunner.withPropertyValues("spring.data.redis.port=" + server.port(), "spring.data.redis.timeout=1s")
			.run((context) -> {
				RedisLockBackend backend = context.getBean(RedisLockBackend.class);
				assertThat(backend.channel()).isEqualTo(RedisLockBackend.DEFAULT_CHANNEL);
				String key = "config-test:" + UUID.randomUUID();
				assertThat(backend.tryAcquire(key, "owner", Duration.ofSeconds(5)).acquired()).isTrue();
				assertThat(backend.release(key, "owner")).isTrue();
			});
	}

	@Test
	void channelIsConfigurable() {
		this.contextRunner
			.withPropertyValues("spring.data.redis.port=" + server.port(), "holdfast.redis.channel=app:released")
			.run((context) -> assertThat(context.getBean(RedisLockBackend.class).channel()).isEqualTo("app:released"));
	}

	@Test
	void emptyChannelFailsWithTheActionToTake() {
		this.contextRunner.withPropertyValues("spring.data.redis.port=" + server.port(), "holdfast.redis.channel= ")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("holdfast.redis.channel")
				.satisfies((ex) -> assertThat(((LockConfigurationException) ex).getAction())
					.contains("holdfast.redis.channel")));
	}

	@Test
	void backsOffWhenTheUserDefinesALockBackend() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class))
			.withUserConfiguration(UserBackendConfiguration.class, RedisBackendConfiguration.class)
			.withPropertyValues("spring.data.redis.port=" + server.port())
			.run((context) -> assertThat(context).hasSingleBean(LockBackend.class)
				.doesNotHaveBean(RedisLockBackend.class)
				.getBean(LockBackend.class)
				.isInstanceOf(InMemoryLockBackend.class));
	}

	@Test
	void backsOffWithoutSpringDataRedis() {
		new ApplicationContextRunner().withUserConfiguration(RedisBackendConfiguration.class)
			.withClassLoader(new FilteredClassLoader(RedisConnectionFactory.class))
			.run((context) -> assertThat(context).hasNotFailed().doesNotHaveBean(LockBackend.class));
	}

	@Test
	void failsWithTheActionToTakeWithoutAConnectionFactory() {
		new ApplicationContextRunner().withUserConfiguration(RedisBackendConfiguration.class)
			.withPropertyValues("holdfast.backend=redis")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("RedisConnectionFactory")
				.satisfies((ex) -> assertThat(((LockConfigurationException) ex).getAction())
					.contains("spring-boot-starter-data-redis")
					.contains("spring.data.redis.")));
	}

	@Configuration(proxyBeanMethods = false)
	static class UserBackendConfiguration {

		@Bean
		InMemoryLockBackend userBackend() {
			return new InMemoryLockBackend();
		}

	}

}
