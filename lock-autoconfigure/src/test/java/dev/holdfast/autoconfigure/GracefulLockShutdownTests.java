package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.context.LifecycleAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

class GracefulLockShutdownTests {

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, HoldfastAutoConfiguration.class))
		.withBean(InMemoryLockBackend.class, () -> this.backend);

	private final String name = "job-" + UUID.randomUUID();

	@Test
	void runningLockedMethodFinishesBeforeItsLockIsReleasedAndNewLocksAreRefused() {
		this.runner.withPropertyValues("spring.lifecycle.timeout-per-shutdown-phase=10s").run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			CountDownLatch running = new CountDownLatch(1);
			CountDownLatch finish = new CountDownLatch(1);
			FutureTask<String> method = new FutureTask<>(() -> template.executeLocked(this.name, null,
					LockOptions.defaults(), () -> {
						running.countDown();
						assertThat(finish.await(10, TimeUnit.SECONDS)).isTrue();
						// Still exclusive while the context is closing.
						assertThat(otherInstance().tryAcquire(this.name, null, LockOptions.defaults())).isEmpty();
						return "done";
					}));
			new Thread(method, "locked-method").start();
			assertThat(running.await(5, TimeUnit.SECONDS)).isTrue();
			CompletableFuture<Void> closing = CompletableFuture.runAsync(context::close);
			await().atMost(Duration.ofSeconds(5))
				.untilAsserted(() -> assertThatExceptionOfType(LockBackendException.class)
					.isThrownBy(() -> template.tryAcquire("other-" + this.name, null, LockOptions.defaults()))
					.withMessageContaining("shutting down"));
			assertThat(closing).isNotDone();
			assertThat(template.heldLeases()).hasSize(1);
			finish.countDown();
			assertThat(method.get(5, TimeUnit.SECONDS)).isEqualTo("done");
			closing.get(5, TimeUnit.SECONDS);
			try (Lease lease = otherInstance().acquire(this.name, null, LockOptions.defaults())) {
				assertThat(lease.isValid()).isTrue();
			}
		});
	}

	@Test
	void methodRunningPastTheShutdownTimeoutLosesItsLockWhichExpiresInsteadOfBeingReleased() {
		this.runner.withPropertyValues("spring.lifecycle.timeout-per-shutdown-phase=200ms").run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			Lease lease = template.acquire(this.name, null, LockOptions.defaults().leaseTime(Duration.ofSeconds(2)));
			try {
				long start = System.nanoTime();
				context.close();
				assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
				assertThat(lease.isValid()).isFalse();
				assertThat(template.heldLeases()).isEmpty();
				// The method may still write: its lock stays on the backend until it expires.
				assertThat(otherInstance().tryAcquire(this.name, null, LockOptions.defaults())).isEmpty();
				await().atMost(Duration.ofSeconds(5)).until(() -> otherInstance()
					.tryAcquire(this.name, null, LockOptions.defaults()).map((taken) -> {
						taken.close();
						return true;
					}).orElse(false));
			}
			finally {
				lease.close();
			}
		});
	}

	@Test
	void contextStartedAgainAfterAStopTakesLocksAgain() {
		this.runner.run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			context.getSourceApplicationContext().stop();
			assertThatExceptionOfType(LockBackendException.class)
				.isThrownBy(() -> template.tryAcquire(this.name, null, LockOptions.defaults()))
				.withMessageContaining("shutting down");
			assertThat(template.tryAcquireAsync(this.name, null, LockOptions.defaults()))
				.failsWithin(Duration.ofSeconds(5))
				.withThrowableThat()
				.havingRootCause()
				.isInstanceOf(LockBackendException.class)
				.withMessageContaining("shutting down");
			context.getSourceApplicationContext().start();
			assertThat(template.tryAcquire(this.name, null, LockOptions.defaults())).isPresent().get()
				.satisfies(Lease::close);
		});
	}

	private DefaultLockTemplate otherInstance() {
		return new DefaultLockTemplate(this.backend, LockSettings.defaults());
	}

}
