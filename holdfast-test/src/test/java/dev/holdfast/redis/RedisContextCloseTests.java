package dev.holdfast.redis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettucePoolingClientConfiguration;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Closing an application context that used Redis locks (held, contended, the release
 * subscription open) logs no WARN or ERROR, on Boot's default Lettuce factory and on a pooled one
 * (commons-pool2 on the classpath).
 */
@ExtendWith(OutputCaptureExtension.class)
class RedisContextCloseTests {

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

	@ParameterizedTest(name = "pooled: {0}")
	@ValueSource(booleans = { false, true })
	void closingTheContextLogsNoWarningOrError(boolean pooled, CapturedOutput output) {
		AtomicInteger closingFrom = new AtomicInteger();
		this.runner
			.withPropertyValues("spring.data.redis.port=" + server.port(), "spring.data.redis.timeout=2s",
					"spring.data.redis.lettuce.pool.enabled=" + pooled)
			.run((context) -> {
				LettuceConnectionFactory factory = context.getBean(LettuceConnectionFactory.class);
				assertThat(factory.getClientConfiguration()).isInstanceOfSatisfying(Object.class,
						(configuration) -> assertThat(configuration instanceof LettucePoolingClientConfiguration).isEqualTo(pooled));
				LockTemplate template = context.getBean(LockTemplate.class);
				String name = "close-" + UUID.randomUUID();
				Lease held = template.acquire(name, null, LockOptions.defaults().waitTime(Duration.ZERO));
				// A waiter on another thread contends and opens the release subscription.
				CompletableFuture<Void> waiter = CompletableFuture.runAsync(
						() -> template.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(20)))
							.close());
				await().atMost(Duration.ofSeconds(10)).until(() -> subscribers(factory) > 0);
				held.close();
				waiter.join();
				closingFrom.set(output.getAll().length());
			});
		String closing = output.getAll().substring(closingFrom.get());
		assertThat(closing.lines().filter((line) -> line.matches(".*\\] (WARN|ERROR) .*")).toList())
			.as("WARN and ERROR lines while the context closed").isEmpty();
		assertThat(closing).doesNotContain("Exception");
	}

	/** Connections subscribed to a channel, from {@code CLIENT LIST}. */
	private static long subscribers(RedisConnectionFactory factory) {
		try (RedisConnection connection = factory.getConnection()) {
			Object clients = connection.execute("CLIENT", "LIST".getBytes(StandardCharsets.UTF_8));
			String list = (clients instanceof byte[] bytes) ? new String(bytes, StandardCharsets.UTF_8)
					: String.valueOf(clients);
			return list.lines().filter((line) -> line.contains(" sub=1 ")).count();
		}
	}

}
