package dev.holdfast.redis;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.data.redis.connection.RedisConnectionFactory;

import dev.holdfast.Lease;
import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A release names the next local waiter only when it asks for the lock itself (RWL-8): a reader
 * cannot claim a reservation, so one named would hold the key reserved for nobody for the
 * reservation window.
 */
class RedisReadWriteLinesTests {

	private static RedisServer server;

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		server.close();
	}

	@Test
	void aReleaseNeverNamesAWaitingLocalReaderAsTheNextWaiter() throws Exception {
		RedisConnectionFactory factory = RedisClients.connectionFactory(server);
		List<@Nullable String> named = new CopyOnWriteArrayList<>();
		AtomicInteger sharedAttempts = new AtomicInteger();
		String name = "rw-lines-" + UUID.randomUUID();
		try (ForwardingRedisBackend backend = new ForwardingRedisBackend(RedisLockBackend.of(factory, "rw-lines")) {

			@Override
			public AcquireResult tryAcquireShared(String key, String owner, Duration ttl, Duration recordFor) {
				sharedAttempts.incrementAndGet();
				return super.tryAcquireShared(key, owner, ttl, recordFor);
			}

			@Override
			public void releaseAsync(String key, String owner, @Nullable String nextLocal,
					java.util.function.BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
				named.add(nextLocal);
				super.releaseAsync(key, owner, nextLocal, whenAnswered);
			}

			@Override
			public boolean release(String key, String owner, @Nullable String nextLocal) {
				named.add(nextLocal);
				return super.release(key, owner, nextLocal);
			}

		}; DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults())) {
			Lease writer = template.acquire(name, null, LockOptions.defaults().waitTime(Duration.ZERO));
			CompletableFuture<Optional<Lease>> reader = CompletableFuture.supplyAsync(() -> template.tryAcquire(name,
					null, LockOptions.defaults().mode(LockMode.READ).waitTime(Duration.ofSeconds(10))));
			await().atMost(Duration.ofSeconds(10)).until(() -> sharedAttempts.get() > 0);
			writer.close();
			Optional<Lease> read = reader.get(15, TimeUnit.SECONDS);
			assertThat(read).isPresent();
			read.get().close();
			assertThat(named).as("next waiters named by the writer's release").isNotEmpty().first().isNull();
		}
		finally {
			((DisposableBean) factory).destroy();
		}
	}

}
