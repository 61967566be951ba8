package dev.holdfast.redis;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.context.LifecycleAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.actuate.LockMetricsListener;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Closing an application context while a locked method still runs (past
 * {@code spring.lifecycle.timeout-per-shutdown-phase}), on a real Redis, seen from another
 * instance with its own connections.
 */
@ExtendWith(OutputCaptureExtension.class)
class RedisGracefulShutdownTests {

	private static RedisServer server;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, DataRedisAutoConfiguration.class,
				HoldfastAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class))
		.withBean(MeterRegistry.class, SimpleMeterRegistry::new);

	private final String name = "shutdown-" + UUID.randomUUID();

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		server.close();
	}

	@Test
	void lockOfAMethodStillRunningAtCloseIsLostAndExpiresOnTheBackendInsteadOfBeingReleased(CapturedOutput output)
			throws Exception {
		LettuceConnectionFactory otherConnections = RedisClients.connectionFactory(server);
		DefaultLockTemplate otherInstance = new DefaultLockTemplate(
				RedisLockBackend.of(otherConnections, RedisLockBackend.DEFAULT_CHANNEL), LockSettings.defaults());
		CountDownLatch running = new CountDownLatch(1);
		CountDownLatch finish = new CountDownLatch(1);
		AtomicReference<Lease> inUse = new AtomicReference<>();
		AtomicReference<Double> lostCount = new AtomicReference<>();
		try {
			this.runner
				.withPropertyValues("spring.data.redis.port=" + server.port(), "spring.data.redis.timeout=2s",
						"spring.lifecycle.timeout-per-shutdown-phase=200ms")
				.run((context) -> {
					DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
					MeterRegistry meters = context.getBean(MeterRegistry.class);
					FutureTask<String> method = new FutureTask<>(() -> {
						try (Lease lease = template.acquire(this.name, null,
								LockOptions.defaults().leaseTime(Duration.ofSeconds(3)))) {
							inUse.set(lease);
							running.countDown();
							finish.await(30, TimeUnit.SECONDS);
							return "done";
						}
					});
					new Thread(method, "locked-method").start();
					assertThat(running.await(5, TimeUnit.SECONDS)).isTrue();
					context.close();
					lostCount.set(meters.counter(LockMetricsListener.LOST, "name", this.name, "backend", "redis", "mode",
							"exclusive")
						.count());
				});
			Lease lease = inUse.get();
			assertThat(lease.isValid()).as("the running method's lease after close").isFalse();
			assertThat(lostCount.get()).isEqualTo(1.0);
			assertThat(output).contains("Holdfast lost lock").contains(this.name);
			// Still held on Redis: no other instance gets it while the method may still write.
			assertThat(otherInstance.tryAcquire(this.name, null, LockOptions.defaults())).isEmpty();
			// Not renewed any more: it expires by itself.
			await().atMost(Duration.ofSeconds(10)).until(() -> {
				try (Lease taken = otherInstance.tryAcquire(this.name, null, LockOptions.defaults()).orElse(null)) {
					return taken != null;
				}
			});
		}
		finally {
			finish.countDown();
			otherInstance.close();
			otherConnections.destroy();
		}
	}

}
