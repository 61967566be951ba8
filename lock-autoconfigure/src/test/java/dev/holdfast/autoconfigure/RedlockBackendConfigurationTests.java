package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.redisson.api.RedissonClient;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.redlock.RedlockLockBackend;
import dev.holdfast.redlock.RedlockSettings;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class RedlockBackendConfigurationTests {

	private static RedisServer first;

	private static RedisServer second;

	private static RedisServer third;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(RedlockBackendConfiguration.class))
		.withPropertyValues("holdfast.backend=redlock");

	@BeforeAll
	static void startServers() {
		first = RedisServer.start();
		second = RedisServer.start();
		third = RedisServer.start();
	}

	@AfterAll
	static void stopServers() {
		first.close();
		second.close();
		third.close();
	}

	private String nodes() {
		return "holdfast.redlock.nodes=" + first.uri() + "," + second.uri() + "," + third.uri();
	}

	@Test
	void backendConnectsToTheConfiguredNodes() {
		this.runner.withPropertyValues(nodes(), "holdfast.redlock.node-timeout=1s",
				"holdfast.redlock.drift-factor=0.02", "holdfast.redlock.min-drift=5ms")
			.run((context) -> {
				assertThat(context).hasSingleBean(LockBackend.class);
				RedlockLockBackend backend = context.getBean(RedlockLockBackend.class);
				assertThat(backend.nodeNames()).containsExactly(first.uri(), second.uri(), third.uri());
				assertThat(backend.quorum()).isEqualTo(2);
				assertThat(backend.settings().nodeTimeout()).isEqualTo(Duration.ofSeconds(1));
				assertThat(backend.settings().driftFactor()).isEqualTo(0.02);
				assertThat(backend.settings().minDrift()).isEqualTo(Duration.ofMillis(5));
				assertThat(backend.tryAcquire("holdfast:autoconfigure", "owner", Duration.ofSeconds(5)).acquired())
					.isTrue();
				assertThat(backend.release("holdfast:autoconfigure", "owner")).isTrue();
			});
	}

	@Test
	void releaseChannelFollowsTheKeyPrefix() {
		this.runner.withPropertyValues(nodes())
			.run((context) -> assertThat(context.getBean(RedlockLockBackend.class).settings().releaseChannel())
				.isEqualTo(RedlockSettings.DEFAULT_RELEASE_CHANNEL)
				.isEqualTo("holdfast:redlock:released"));
		this.runner.withPropertyValues(nodes(), "holdfast.key-prefix=orders:").run((context) -> {
			RedlockLockBackend backend = context.getBean(RedlockLockBackend.class);
			assertThat(backend.settings().releaseChannel()).isEqualTo("orders:redlock:released");
			List<String> heard = new CopyOnWriteArrayList<>();
			try (AutoCloseable subscription = backend.subscribe(heard::add)) {
				await().atMost(Duration.ofSeconds(10))
					.until(() -> ((List<?>) first.command("PUBSUB", "CHANNELS")).contains("orders:redlock:released"));
				assertThat(backend.tryAcquire("orders:channel", "owner", Duration.ofSeconds(5)).acquired()).isTrue();
				assertThat(backend.release("orders:channel", "owner")).isTrue();
				await().atMost(Duration.ofSeconds(10)).until(() -> heard.contains("orders:channel"));
			}
		});
		this.runner.withPropertyValues(nodes(), "holdfast.key-prefix=")
			.run((context) -> assertThat(context.getBean(RedlockLockBackend.class).settings().releaseChannel())
				.isEqualTo(RedlockSettings.DEFAULT_RELEASE_CHANNEL));
	}

	@Test
	void configuredNodesSelectRedlockWhenNoBackendIsNamed() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
			.withPropertyValues(nodes(), "holdfast.redlock.node-timeout=1s")
			.run((context) -> {
				assertThat(context).hasSingleBean(RedlockLockBackend.class);
				assertThat(context.getBean(LockTemplate.class)
					.executeLocked("autoconfigure", null, LockOptions.defaults(), () -> "ran")).isEqualTo("ran");
			});
	}

	@Test
	void missingNodesFailWithTheAction() {
		this.runner.run((context) -> assertThat(context).getFailure()
			.rootCause()
			.isInstanceOf(LockConfigurationException.class)
			.hasMessageContaining("no node is configured")
			.satisfies((ex) -> assertThat(((LockConfigurationException) ex).getAction())
				.contains("holdfast.redlock.nodes")));
	}

	@Test
	void malformedOrRepeatedNodesFailNamingTheEntry() {
		this.runner.withPropertyValues("holdfast.redlock.nodes=" + first.uri() + ",redis-2:6379")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("[1] 'redis-2:6379'"));
		this.runner.withPropertyValues("holdfast.redlock.nodes=" + first.uri() + "," + first.uri())
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("listed twice"));
	}

	@Test
	void badTimingFailsNamingTheProperty() {
		this.runner.withPropertyValues(nodes(), "holdfast.redlock.drift-factor=0.7")
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("driftFactor")
				.satisfies((ex) -> assertThat(((LockConfigurationException) ex).getAction())
					.contains("holdfast.redlock.drift-factor")));
	}

	@Test
	void missingRedissonFailsWithTheAction() {
		this.runner.withPropertyValues(nodes())
			.withClassLoader(new FilteredClassLoader(RedissonClient.class))
			.run((context) -> assertThat(context).getFailure()
				.rootCause()
				.isInstanceOf(LockConfigurationException.class)
				.hasMessageContaining("org.redisson:redisson"));
	}

	@Test
	void backsOffWhenTheApplicationDefinesABackend() {
		this.runner.withPropertyValues(nodes())
			.withUserConfiguration(OwnBackend.class)
			.run((context) -> assertThat(context).hasSingleBean(LockBackend.class)
				.doesNotHaveBean(RedlockLockBackend.class));
	}

	@Configuration(proxyBeanMethods = false)
	static class OwnBackend {

		@Bean
		LockBackend ownBackend() {
			return new InMemoryLockBackend();
		}

	}

}
