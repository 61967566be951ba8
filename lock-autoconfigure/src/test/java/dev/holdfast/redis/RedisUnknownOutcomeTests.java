package dev.holdfast.redis;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockInterruptedException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Acquisitions whose outcome the caller cannot know: Redis is paused (SIGSTOP) when the script is
 * sent, so the caller times out (or is interrupted) while the script waits in Redis's socket,
 * and Redis runs it when it resumes, taking the lock for an owner token that the caller never
 * got. The engine then releases it, owner-checked: another client gets the lock promptly after
 * Redis resumes, not after the one-minute lease.
 */
class RedisUnknownOutcomeTests {

	private static final Duration LEASE = Duration.ofMinutes(1);

	/** Far below the lease: the orphaned lock was released, not expired. */
	private static final Duration PROMPTLY = Duration.ofSeconds(10);

	private RedisServer server;

	private LettuceConnectionFactory factory;

	private LettuceConnectionFactory otherFactory;

	private RedisLockBackend other;

	@BeforeEach
	void start() {
		this.server = RedisServer.start();
		this.factory = RedisClients.connectionFactory(this.server);
		this.otherFactory = RedisClients.connectionFactory(this.server);
		this.other = new RedisLockBackend(this.otherFactory);
	}

	@AfterEach
	void stop() {
		this.server.resume();
		this.other.close();
		this.factory.destroy();
		this.otherFactory.destroy();
		this.server.close();
	}

	@Test
	void timedOutAcquisitionIsReleasedOnceRedisResumes() {
		timedOutAcquisitionIsReleased(RedisLockBackend.of(this.factory, RedisLockBackend.DEFAULT_CHANNEL));
	}

	@Test
	void timedOutAcquisitionOfABlockingBackendIsReleasedOnceRedisResumes() {
		timedOutAcquisitionIsReleased(new RedisLockBackend(this.factory));
	}

	private void timedOutAcquisitionIsReleased(LockBackend backend) {
		try (DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults())) {
			String name = "unknown-" + UUID.randomUUID();
			String key = template.keyFor(name, null);
			warmUp(template);
			this.server.pause();
			assertThatExceptionOfType(LockBackendException.class)
				.isThrownBy(() -> template.acquire(name, null, options()));
			this.server.resume();
			assertFreedPromptly(key);
		}
	}

	@Test
	void timedOutNonBlockingAcquisitionIsReleasedOnceRedisResumes() {
		try (DefaultLockTemplate template = new DefaultLockTemplate(
				RedisLockBackend.of(this.factory, RedisLockBackend.DEFAULT_CHANNEL), LockSettings.defaults())) {
			String name = "unknown-async-" + UUID.randomUUID();
			String key = template.keyFor(name, null);
			warmUp(template);
			this.server.pause();
			CompletableFuture<?> acquisition = template.tryAcquireAsync(name, null, options());
			await().atMost(Duration.ofSeconds(10)).until(acquisition::isDone);
			assertThat(acquisition).isCompletedExceptionally();
			this.server.resume();
			assertFreedPromptly(key);
		}
	}

	@Test
	void interruptDuringTheRedisCallIsALockInterruptedExceptionAndTheLockIsReleased() throws Exception {
		try (DefaultLockTemplate template = new DefaultLockTemplate(
				RedisLockBackend.of(this.factory, RedisLockBackend.DEFAULT_CHANNEL), LockSettings.defaults())) {
			String name = "interrupted-" + UUID.randomUUID();
			String key = template.keyFor(name, null);
			AtomicReference<Throwable> thrown = new AtomicReference<>();
			AtomicReference<Boolean> flagKept = new AtomicReference<>();
			warmUp(template);
			this.server.pause();
			Thread caller = new Thread(() -> {
				try {
					template.acquire(name, null, options()).close();
				}
				catch (RuntimeException ex) {
					thrown.set(ex);
				}
				flagKept.set(Thread.currentThread().isInterrupted());
			});
			caller.start();
			// Blocked waiting for Redis's reply.
			await().atMost(Duration.ofSeconds(5)).until(() -> caller.getState() == Thread.State.TIMED_WAITING
					|| caller.getState() == Thread.State.WAITING);
			caller.interrupt();
			caller.join(5000);
			assertThat(thrown.get()).isInstanceOf(LockInterruptedException.class);
			assertThat(flagKept.get()).as("interrupt flag kept").isTrue();
			this.server.resume();
			assertFreedPromptly(key);
		}
	}

	/** Connects: the script must reach Redis's socket, not wait for a connection. */
	private static void warmUp(DefaultLockTemplate template) {
		template.acquire("warm-up-" + UUID.randomUUID(), null, options()).close();
	}

	private void assertFreedPromptly(String key) {
		long resumed = System.nanoTime();
		await().atMost(PROMPTLY)
			.ignoreException(LockBackendException.class)
			.until(() -> this.other.tryAcquire(key, "other-" + UUID.randomUUID(), LEASE).acquired());
		System.out.println("Lock of the failed acquisition free " + (System.nanoTime() - resumed) / 1_000_000
				+ " ms after Redis resumed");
	}

	private static LockOptions options() {
		return LockOptions.defaults().waitTime(Duration.ZERO).leaseTime(LEASE);
	}

}
