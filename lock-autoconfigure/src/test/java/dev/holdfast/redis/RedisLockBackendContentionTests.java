package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.testsupport.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.awaitility.Awaitility.await;

/**
 * Release announcements only for contended locks: a failed acquisition marks the lock, its
 * release publishes, an uncontended release publishes nothing, and waiters in other instances
 * still wake promptly. Every backend and template has its own connection factory, as another
 * process would.
 */
class RedisLockBackendContentionTests {

	private static final Duration TTL = Duration.ofSeconds(10);

	/**
	 * Lease and poll interval of the waiting tests: a waiter that missed the release would sleep
	 * this long, so only the announcement can wake it within {@link #WAKE_BOUND}.
	 */
	private static final Duration SLOW_POLL = Duration.ofMinutes(1);

	/** Well under the poll fallback, with slack for a loaded machine. */
	private static final Duration WAKE_BOUND = Duration.ofSeconds(5);

	private static RedisServer server;

	private static StringRedisTemplate raw;

	private static final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private final List<AutoCloseable> closeables = new ArrayList<>();

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
		raw = RedisClients.template(newFactory());
	}

	@AfterAll
	static void stopRedis() {
		factories.forEach(LettuceConnectionFactory::destroy);
		factories.clear();
		server.close();
	}

	@AfterEach
	void close() throws Exception {
		for (AutoCloseable closeable : this.closeables) {
			closeable.close();
		}
	}

	@Test
	void onlyAContendedReleasePublishes() throws Exception {
		String channel = "test:channel:" + UUID.randomUUID();
		BlockingQueue<String> published = subscribeRaw(channel);
		RedisLockBackend first = newBackend(channel);
		RedisLockBackend second = newBackend(channel);
		AsyncLockBackend async = (AsyncLockBackend) first;
		String uncontended = randomKey();
		for (int i = 0; i < 20; i++) {
			assertThat(first.tryAcquire(uncontended, "owner-" + i, TTL).acquired()).isTrue();
			assertThat(first.release(uncontended, "owner-" + i)).isTrue();
			assertThat(join(async.tryAcquireAsync(uncontended, "async-" + i, TTL)).acquired()).isTrue();
			assertThat(join(async.releaseAsync(uncontended, "async-" + i))).isTrue();
		}
		String contended = randomKey();
		assertThat(first.tryAcquire(contended, "holder", TTL).acquired()).isTrue();
		assertThat(second.tryAcquire(contended, "waiter", TTL).acquired()).isFalse();
		assertThat(first.release(contended, "holder")).isTrue();
		// One subscriber gets messages in publish order: an uncontended release would come first.
		assertThat(published.poll(5, TimeUnit.SECONDS)).isEqualTo(contended);
		assertThat(join(async.tryAcquireAsync(contended, "async-holder", TTL)).acquired()).isTrue();
		assertThat(second.tryAcquire(contended, "waiter", TTL).acquired()).isFalse();
		assertThat(join(async.releaseAsync(contended, "async-holder"))).isTrue();
		assertThat(published.poll(5, TimeUnit.SECONDS)).isEqualTo(contended);
		assertThat(published.poll(200, TimeUnit.MILLISECONDS)).isNull();
	}

	@Test
	void aContendedLockStaysRenewableAndReleasableByItsOwnerOnly() {
		RedisLockBackend first = newBackend(RedisLockBackend.DEFAULT_CHANNEL);
		RedisLockBackend second = newBackend(RedisLockBackend.DEFAULT_CHANNEL);
		String key = randomKey();
		first.tryAcquire(key, "owner", TTL);
		assertThat(raw.opsForValue().get("{" + key + "}")).isEqualTo("owner");
		assertThat(second.tryAcquire(key, "other", TTL).acquired()).isFalse();
		assertThat(second.tryAcquire(key, "other", TTL).acquired()).isFalse();
		assertThat(raw.opsForValue().get("{" + key + "}")).as("marked once").isEqualTo("owner*");
		assertThat(second.renew(List.of(new HeldLock(key, "other", Duration.ofMinutes(5))))).isEmpty();
		assertThat(first.renew(List.of(new HeldLock(key, "owner", Duration.ofMinutes(5))))).containsExactly(key);
		assertThat(raw.getExpire("{" + key + "}")).isBetween(290L, 300L);
		assertThat(second.release(key, "other")).isFalse();
		assertThat(first.release(key, "owner")).isTrue();
		assertThat(raw.hasKey("{" + key + "}")).isFalse();
	}

	@Test
	void ownersEndingWithTheContentionMarkAreRejected() {
		RedisLockBackend backend = newBackend(RedisLockBackend.DEFAULT_CHANNEL);
		String key = randomKey();
		backend.tryAcquire(key, "owner", TTL);
		newBackend(RedisLockBackend.DEFAULT_CHANNEL).tryAcquire(key, "other", TTL);
		// "owner*" is now the value of the lock: an owner of that name must not release or renew it.
		assertThatIllegalArgumentException().isThrownBy(() -> backend.release(key, "owner*"))
			.withMessageContaining("'owner*'")
			.withMessageContaining("must not end with '*'");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> backend.renew(List.of(new HeldLock(key, "owner*", TTL))))
			.withMessageContaining("'owner*'");
		assertThatIllegalArgumentException().isThrownBy(() -> backend.tryAcquire(randomKey(), "owner*", TTL))
			.withMessageContaining("'owner*'");
		assertThat(((AsyncLockBackend) backend).releaseAsync(key, "owner*")).isCompletedExceptionally();
		assertThat(raw.opsForValue().get("{" + key + "}")).isEqualTo("owner*");
	}

	@Test
	void blockingWaiterInAnotherInstanceWakesPromptlyOnRelease() throws Exception {
		DefaultLockTemplate holder = newTemplate();
		DefaultLockTemplate waiter = newTemplate();
		String name = randomKey();
		Lease held = holder.acquire(name, null, LockOptions.defaults().waitTime(Duration.ZERO));
		CompletableFuture<Long> acquiredAt = new CompletableFuture<>();
		Thread thread = new Thread(() -> {
			try (Lease lease = waiter.acquire(name, null, LockOptions.defaults().waitTime(SLOW_POLL))) {
				acquiredAt.complete(System.nanoTime());
			}
			catch (RuntimeException ex) {
				acquiredAt.completeExceptionally(ex);
			}
		});
		thread.start();
		// Parked for 100 ms: waiting for the lock, not inside a round trip.
		await().during(Duration.ofMillis(100))
			.atMost(Duration.ofSeconds(5))
			.until(() -> thread.getState() == Thread.State.TIMED_WAITING);
		long releasedAt = System.nanoTime();
		held.close();
		long wake = acquiredAt.get(30, TimeUnit.SECONDS) - releasedAt;
		assertThat(Duration.ofNanos(wake)).as("wake-up after release, polling every %s", SLOW_POLL)
			.isLessThan(WAKE_BOUND);
	}

	@Test
	void nonBlockingWaiterInAnotherInstanceWakesPromptlyOnRelease() throws Exception {
		DefaultLockTemplate holder = newTemplate();
		DefaultLockTemplate waiter = newTemplate();
		assertThat(waiter.supportsNonBlocking()).isTrue();
		String name = randomKey();
		Lease held = holder.acquire(name, null, LockOptions.defaults().waitTime(Duration.ZERO));
		CompletableFuture<Lease> waiting = waiter.tryAcquireAsync(name, null,
				LockOptions.defaults().waitTime(SLOW_POLL));
		// The waiter listens before its first attempt, and that attempt marks the lock.
		await().atMost(Duration.ofSeconds(5))
			.alias("the waiter's attempt marks the lock as contended")
			.until(() -> "*".equals(lastCharacterOf(name)));
		long releasedAt = System.nanoTime();
		held.close();
		Lease lease = waiting.get(30, TimeUnit.SECONDS);
		long wake = System.nanoTime() - releasedAt;
		assertThat(lease).isNotNull();
		assertThat(Duration.ofNanos(wake)).as("wake-up after release, polling every %s", SLOW_POLL)
			.isLessThan(WAKE_BOUND);
		join(waiter.releaseAsync(lease));
	}

	@Test
	void fencingTokensIncreaseAcrossAFlushOfAllKeys() {
		RedisLockBackend backend = newBackend(RedisLockBackend.DEFAULT_CHANNEL);
		AsyncLockBackend async = (AsyncLockBackend) backend;
		String key = randomKey();
		long last = 0;
		for (int i = 0; i < 50; i++) {
			AcquireResult result = (i % 2 == 0) ? backend.tryAcquire(key, "owner-" + i, TTL)
					: join(async.tryAcquireAsync(key, "owner-" + i, TTL));
			assertThat(result.fencingToken()).isGreaterThan(last);
			last = result.fencingToken();
			backend.release(key, "owner-" + i);
		}
		// What a restart of a Redis without persistence does to the counter.
		raw.execute((RedisCallback<Object>) (connection) -> {
			connection.serverCommands().flushAll();
			return null;
		});
		long afterFlush = backend.tryAcquire(key, "after-flush", TTL).fencingToken();
		assertThat(afterFlush).isGreaterThan(last);
		backend.release(key, "after-flush");
		raw.execute((RedisCallback<Object>) (connection) -> {
			connection.serverCommands().flushAll();
			return null;
		});
		assertThat(join(async.tryAcquireAsync(key, "async-after-flush", TTL)).fencingToken())
			.isGreaterThan(afterFlush);
	}

	private String lastCharacterOf(String key) {
		String value = raw.opsForValue().get("{" + key + "}");
		return (value != null && !value.isEmpty()) ? value.substring(value.length() - 1) : null;
	}

	private BlockingQueue<String> subscribeRaw(String channel) {
		BlockingQueue<String> messages = new LinkedBlockingQueue<>();
		RedisClient client = RedisClient.create(RedisURI.create("127.0.0.1", server.port()));
		StatefulRedisPubSubConnection<String, String> connection = client.connectPubSub();
		this.closeables.add(() -> client.shutdown(Duration.ZERO, Duration.ofSeconds(2)));
		connection.addListener(new RedisPubSubAdapter<>() {

			@Override
			public void message(String messageChannel, String message) {
				messages.add(message);
			}

		});
		connection.sync().subscribe(channel);
		return messages;
	}

	private DefaultLockTemplate newTemplate() {
		DefaultLockTemplate template = new DefaultLockTemplate(newBackend(RedisLockBackend.DEFAULT_CHANNEL),
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(SLOW_POLL).withPollInterval(SLOW_POLL));
		this.closeables.add(0, template);
		return template;
	}

	private RedisLockBackend newBackend(String channel) {
		RedisLockBackend backend = RedisLockBackend.of(newFactory(), channel);
		this.closeables.add(backend);
		return backend;
	}

	private static LettuceConnectionFactory newFactory() {
		LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
		factories.add(factory);
		return factory;
	}

	private static <T> T join(CompletionStage<T> stage) {
		return stage.toCompletableFuture().orTimeout(5, TimeUnit.SECONDS).join();
	}

	private static String randomKey() {
		return "test-" + UUID.randomUUID();
	}

}
