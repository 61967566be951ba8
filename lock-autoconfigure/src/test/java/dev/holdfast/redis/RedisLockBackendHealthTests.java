package dev.holdfast.redis;

import java.time.Duration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.RedisConnectionFactory;

import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The {@code holdfast} health indicator on a real Redis: UP while it answers, DOWN within the
 * command timeout once it is killed, UP again after a restart.
 */
class RedisLockBackendHealthTests {

	private RedisServer server;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class,
				HoldfastActuatorAutoConfiguration.class))
		.withPropertyValues("holdfast.backend=redis");

	@BeforeEach
	void start() {
		this.server = RedisServer.start();
	}

	@AfterEach
	void stop() {
		this.server.close();
	}

	@Test
	void healthIsDownWhileRedisIsKilledAndUpAgainAfterRestart() {
		this.runner.withBean(RedisConnectionFactory.class, () -> RedisClients.connectionFactory(this.server))
			.run((context) -> {
				HealthIndicator indicator = context.getBean("holdfastHealthIndicator", HealthIndicator.class);
				Health up = indicator.health(true);
				assertThat(up.getStatus()).isEqualTo(Status.UP);
				assertThat(up.getDetails()).containsEntry("backend", "redis").containsEntry("cluster", false);

				this.server.kill();
				long start = System.nanoTime();
				Health down = indicator.health(true);
				assertThat(Duration.ofNanos(System.nanoTime() - start))
					.isLessThan(RedisClients.COMMAND_TIMEOUT.plusSeconds(3));
				assertThat(down.getStatus()).isEqualTo(Status.DOWN);
				assertThat(down.getDetails()).containsEntry("backend", "redis").containsKey("error");
				assertThat(String.valueOf(down.getDetails().get("error"))).contains("Redis PING failed");

				this.server.restart();
				await().atMost(Duration.ofSeconds(10))
					.until(() -> indicator.health(true).getStatus(), Status.UP::equals);
			});
	}

}
