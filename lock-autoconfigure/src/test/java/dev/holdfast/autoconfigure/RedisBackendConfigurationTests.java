package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import redis.clients.jedis.Jedis;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.Lease;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.redis.ReplicaAcks;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class RedisBackendConfigurationTests {

	private static RedisServer server;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class, HoldfastAutoConfiguration.class));

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		server.close();
	}

	private ApplicationContextRunner withRedis() {
		return this.runner.withPropertyValues("spring.data.redis.port=" + server.port(),
				"spring.data.redis.timeout=1s");
	}

	@Test
	void aConnectionFactoryMakesRedisTheBackendOfTheLockTemplate() {
		withRedis().run((context) -> {
			assertThat(context).hasSingleBean(RedisLockBackend.class);
			assertThat(context.getBean(RedisLockBackend.class).channel()).isEqualTo(RedisLockBackend.DEFAULT_CHANNEL);
			String name = "config-test-" + UUID.randomUUID();
			LockOptions options = LockOptions.defaults().waitTime(Duration.ZERO);
			try (Lease lease = context.getBean(LockTemplate.class).acquire(name, null, options)) {
				assertThat(lease.fencingToken()).isPositive();
				RedisLockBackend other = new RedisLockBackend(context.getBean(RedisConnectionFactory.class));
				assertThat(other.tryAcquire(lease.key(), "other", Duration.ofSeconds(5)).acquired()).isFalse();
			}
		});
	}

	@Test
	void aLettuceConnectionFactoryGivesANonBlockingBackend() {
		withRedis().run((context) -> {
			assertThat(context.getBean(RedisLockBackend.class)).isInstanceOf(AsyncLockBackend.class);
			assertThat(context.getBean(DefaultLockTemplate.class).supportsNonBlocking()).isTrue();
		});
	}

	@Test
	void explicitRedisBackendUsesTheConnectionFactory() {
		withRedis().withPropertyValues("holdfast.backend=redis")
			.run((context) -> assertThat(context).hasSingleBean(RedisLockBackend.class));
	}

	@Test
	void anotherExplicitBackendWinsOverTheConnectionFactory() {
		withRedis().withPropertyValues("holdfast.backend=memory")
			.run((context) -> assertThat(context).hasSingleBean(InMemoryLockBackend.class)
				.doesNotHaveBean(RedisLockBackend.class));
	}

	@Test
	void channelIsConfigurable() {
		withRedis().withPropertyValues("holdfast.redis.channel=app:released")
			.run((context) -> assertThat(context.getBean(RedisLockBackend.class).channel()).isEqualTo("app:released"));
	}

	@Test
	void channelFollowsTheKeyPrefixUnlessConfigured() {
		withRedis().withPropertyValues("holdfast.key-prefix=orders:")
			.run((context) -> assertThat(context.getBean(RedisLockBackend.class).channel())
				.isEqualTo("orders:released"));
		withRedis().withPropertyValues("holdfast.key-prefix=")
			.run((context) -> assertThat(context.getBean(RedisLockBackend.class).channel())
				.isEqualTo(RedisLockBackend.DEFAULT_CHANNEL));
		withRedis().withPropertyValues("holdfast.key-prefix=orders:", "holdfast.redis.channel=app:released")
			.run((context) -> assertThat(context.getBean(RedisLockBackend.class).channel())
				.isEqualTo("app:released"));
	}

	@Test
	void applicationsWithDifferentKeyPrefixesDoNotHearEachOthersReservations() {
		String name = "handoff-" + UUID.randomUUID();
		withRedis().withPropertyValues("holdfast.key-prefix=first:").run((first) -> withRedis()
			.withPropertyValues("holdfast.key-prefix=second:")
			.run((second) -> {
				RedisLockBackend firstBackend = first.getBean(RedisLockBackend.class);
				RedisLockBackend secondBackend = second.getBean(RedisLockBackend.class);
				List<String> heardByFirst = new CopyOnWriteArrayList<>();
				List<String> heardBySecond = new CopyOnWriteArrayList<>();
				try (AutoCloseable firstListener = firstBackend.subscribe((key) -> {
				}, (key, owner) -> heardByFirst.add(key)); AutoCloseable secondListener = secondBackend.subscribe((key) -> {
				}, (key, owner) -> heardBySecond.add(key))) {
					await().atMost(Duration.ofSeconds(10))
						.until(() -> firstBackend.isListening() && secondBackend.isListening());
					handOff(second, name);
					await().atMost(Duration.ofSeconds(10)).until(() -> heardBySecond.contains("second:" + name));
					// Redis delivers a subscriber's messages in the order they were published: once the
					// first application hears its own later reservation, it never hears the second's.
					handOff(first, name);
					await().atMost(Duration.ofSeconds(10)).until(() -> heardByFirst.contains("first:" + name));
					assertThat(heardByFirst).containsOnly("first:" + name);
					assertThat(heardBySecond).containsOnly("second:" + name);
				}
			}));
	}

	/** A holder releases {@code name} while a second caller waits for it: the release reserves it. */
	private static void handOff(ApplicationContext context, String name) throws Exception {
		LockTemplate template = context.getBean(LockTemplate.class);
		StringRedisTemplate redis = new StringRedisTemplate(context.getBean(RedisConnectionFactory.class));
		String waiters = "{" + context.getBean(HoldfastProperties.class).getKeyPrefix() + name + "}:waiters";
		CompletableFuture<Long> waiter;
		try (Lease held = template.acquire(name, null, LockOptions.defaults().waitTime(Duration.ZERO))) {
			waiter = CompletableFuture.supplyAsync(() -> {
				try (Lease next = template.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(10)))) {
					return next.fencingToken();
				}
			});
			await().atMost(Duration.ofSeconds(10)).until(() -> redis.opsForZSet().zCard(waiters) == 1);
		}
		assertThat(waiter.get(10, TimeUnit.SECONDS)).isPositive();
	}

	@Test
	void emptyChannelFailsWithTheActionToTake() {
		withRedis().withPropertyValues("holdfast.redis.channel= ").run((context) -> {
			assertThat(context).hasFailed();
			FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
			assertThat(analysis.getDescription()).contains("holdfast.redis.channel");
			assertThat(analysis.getAction()).contains("holdfast.redis.channel");
		});
	}

	@Test
	void replicasToAckReachTheBackend() {
		withRedis().withPropertyValues("holdfast.redis.replicas-to-ack=1", "holdfast.redis.replica-ack-timeout=250ms")
			.run((context) -> assertThat(context.getBean(RedisLockBackend.class).replicaAcks())
				.isEqualTo(new ReplicaAcks(1, Duration.ofMillis(250))));
		withRedis().run((context) -> assertThat(context.getBean(RedisLockBackend.class).replicaAcks())
			.isEqualTo(ReplicaAcks.NONE));
	}

	@Test
	void replicasToAckStartWithTheDefaultTimeoutUnderAOneSecondCommandTimeout() {
		withRedis().withPropertyValues("holdfast.redis.replicas-to-ack=1").run((context) -> {
			assertThat(context).hasNotFailed();
			assertThat(context.getBean(RedisLockBackend.class).replicaAcks())
				.isEqualTo(new ReplicaAcks(1, Duration.ofMillis(500)));
		});
	}

	@Test
	void negativeReplicasToAckFailWithTheActionToTake() {
		assertFailsNaming(withRedis().withPropertyValues("holdfast.redis.replicas-to-ack=-1"),
				"holdfast.redis.replicas-to-ack is -1", "holdfast.redis.replicas-to-ack to 0");
	}

	@Test
	void replicaAckTimeoutNotBelowTheCommandTimeoutFailsWithTheActionToTake() {
		assertFailsNaming(
				withRedis().withPropertyValues("holdfast.redis.replicas-to-ack=1",
						"holdfast.redis.replica-ack-timeout=1s"),
				"is not below the Redis command timeout (1000ms)", "Lower holdfast.redis.replica-ack-timeout");
	}

	@Test
	void replicasToAckOnRedisClusterFailWithTheActionToTake() {
		assertFailsNaming(
				this.runner.withPropertyValues("spring.data.redis.cluster.nodes=127.0.0.1:" + server.port(),
						"holdfast.redis.replicas-to-ack=1", "holdfast.redis.replica-ack-timeout=100ms"),
				"Redis Cluster", "Set holdfast.redis.replicas-to-ack to 0");
	}

	private static void assertFailsNaming(ApplicationContextRunner runner, String description, String action) {
		runner.run((context) -> {
			assertThat(context).hasFailed();
			FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
			assertThat(analysis.getDescription()).contains(description);
			assertThat(analysis.getAction()).contains(action);
		});
	}

	@Test
	void backsOffWhenTheUserDefinesALockBackend() {
		withRedis().withUserConfiguration(UserBackendConfiguration.class)
			.run((context) -> assertThat(context).hasSingleBean(LockBackend.class)
				.doesNotHaveBean(RedisLockBackend.class)
				.getBean(LockBackend.class)
				.isSameAs(context.getBean("userBackend")));
	}

	@Test
	void backsOffWithoutSpringDataRedis() {
		this.runner.withClassLoader(new FilteredClassLoader(RedisConnectionFactory.class, Jedis.class))
			.run((context) -> assertThat(context).hasNotFailed()
				.doesNotHaveBean(RedisLockBackend.class)
				.hasSingleBean(InMemoryLockBackend.class));
	}

	@Test
	void explicitRedisBackendWithoutAConnectionFactoryFailsWithTheActionToTake() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
			.withPropertyValues("holdfast.backend=redis")
			.run((context) -> {
				assertThat(context).hasFailed();
				assertThat(context).getFailure().rootCause().isInstanceOf(LockConfigurationException.class);
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis.getDescription()).contains("holdfast.backend=redis")
					.contains("no RedisConnectionFactory bean");
				assertThat(analysis.getAction()).contains("spring-boot-starter-data-redis").contains("spring.data.redis.");
			});
	}

	@Configuration(proxyBeanMethods = false)
	static class UserBackendConfiguration {

		@Bean
		InMemoryLockBackend userBackend() {
			return new InMemoryLockBackend();
		}

	}

}
