package dev.holdfast.redis;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A non-blocking waiting acquisition whose attempt is in flight when a release's grant returns
 * the lock: the attempt's later failure leaves the caller's lock alone.
 */
class RedisStalledAttemptTests {

	private static RedisServer server;

	private final List<AutoCloseable> closeables = new CopyOnWriteArrayList<>();

	private final String name = "review-" + UUID.randomUUID();

	@BeforeAll
	static void start() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stop() {
		server.close();
	}

	@AfterEach
	void close() throws Exception {
		for (AutoCloseable c : this.closeables) {
			c.close();
		}
	}

	@Test
	void anAttemptInFlightWhenTheGrantReturnedTheLeaseFailsWithoutReleasingTheLock() throws Exception {
		Duration slow = Duration.ofMinutes(1);
		LettuceConnectionFactory fa = RedisClients.connectionFactory(server);
		LettuceConnectionFactory fb = RedisClients.connectionFactory(server);
		this.closeables.add(fa::destroy);
		this.closeables.add(fb::destroy);
		DefaultLockTemplate a = new DefaultLockTemplate(RedisLockBackend.of(fa, RedisLockBackend.DEFAULT_CHANNEL),
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(slow).withPollInterval(slow));
		StallingBackend stalling = new StallingBackend(RedisLockBackend.of(fb, RedisLockBackend.DEFAULT_CHANNEL));
		DefaultLockTemplate b = new DefaultLockTemplate(stalling,
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(slow).withPollInterval(Duration.ofMillis(200)));
		this.closeables.add(0, a);
		this.closeables.add(0, b);
		a.prepare();
		b.prepare();
		await().atMost(Duration.ofSeconds(60)).until(() -> a.releaseEventsListening() && b.releaseEventsListening());
		Lease held = a.acquire(this.name, null, LockOptions.defaults().waitTime(Duration.ZERO));
		CompletableFuture<Lease> waiting = b.tryAcquireAsync(this.name, null, LockOptions.defaults().waitTime(slow));
		// Its second attempt is in flight (stalled) ...
		await().atMost(Duration.ofSeconds(20)).until(() -> stalling.recordedAsyncAttempts.get() >= 2);
		// ... when the release hands it the lock: the grant returns the lease.
		held.close();
		Lease lease = waiting.get(20, TimeUnit.SECONDS);
		org.springframework.data.redis.core.StringRedisTemplate raw = RedisClients.template(fa);
		String owner = raw.opsForValue().get("{" + this.name + "}");
		assertThat(owner).isNotNull();
		// Now the stalled attempt times out: its failure must not release the lock the grant returned.
		stalling.stalled.completeExceptionally(new LockBackendException("command timed out", null));
		await().during(Duration.ofSeconds(1))
			.atMost(Duration.ofSeconds(5))
			.until(() -> owner.equals(raw.opsForValue().get("{" + this.name + "}")));
		assertThat(lease.isValid()).as("the caller holds the lease").isTrue();
		lease.close();
	}

	static final class StallingBackend extends ForwardingRedisBackend {

		final AtomicInteger asyncAcquisitions = new AtomicInteger();

		final AtomicInteger asyncReleases = new AtomicInteger();

		final AtomicInteger recordedAsyncAttempts = new AtomicInteger();

		final CompletableFuture<AcquireResult> stalled = new CompletableFuture<>();

		StallingBackend(RedisLockBackend delegate) {
			super(delegate);
		}

		@Override
		public CompletionStage<AcquireResult> tryAcquireAsync(String key, String owner, Duration ttl) {
			this.asyncAcquisitions.incrementAndGet();
			return super.tryAcquireAsync(key, owner, ttl);
		}

		@Override
		public CompletionStage<Boolean> releaseAsync(String key, String owner) {
			this.asyncReleases.incrementAndGet();
			return super.releaseAsync(key, owner);
		}

		@Override
		public CompletionStage<AcquireResult> tryAcquireWaitingAsync(String key, String owner, Duration ttl,
				Duration recordFor) {
			this.asyncAcquisitions.incrementAndGet();
			if (this.recordedAsyncAttempts.incrementAndGet() == 2) {
				return this.stalled;
			}
			return super.tryAcquireWaitingAsync(key, owner, ttl, recordFor);
		}

		@Override
		public void releaseAsync(String key, String owner, @Nullable String localWaiter,
				@Nullable Duration localWaiterTtl, Duration recordFor,
				BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
			this.asyncReleases.incrementAndGet();
			super.releaseAsync(key, owner, localWaiter, localWaiterTtl, recordFor, whenAnswered);
		}

	}


}
