package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The non-blocking calls of the Redis backend on a Lettuce factory: the same scripts, replies
 * and keys as the blocking calls, and failures as {@link LockBackendException} in the stage.
 */
class RedisNonBlockingLockBackendTests {

	private static final Duration TTL = Duration.ofSeconds(10);

	private static RedisServer server;

	private static StringRedisTemplate raw;

	private static final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private final List<RedisLockBackend> backends = new ArrayList<>();

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
	void closeBackends() {
		this.backends.forEach(RedisLockBackend::close);
	}

	@Test
	void aStandaloneLettuceFactoryGivesANonBlockingBackend() {
		assertThat(newBackend()).isInstanceOf(AsyncLockBackend.class);
		LettuceConnectionFactory unshared = RedisClients.connectionFactory(server);
		unshared.setShareNativeConnection(false);
		factories.add(unshared);
		assertThat(RedisLockBackend.of(unshared, RedisLockBackend.DEFAULT_CHANNEL))
			.isNotInstanceOf(AsyncLockBackend.class);
	}

	@Test
	void asyncAcquireAndReleaseUseTheSameKeysAndRepliesAsTheBlockingCalls() throws Exception {
		AsyncLockBackend async = (AsyncLockBackend) newBackend();
		RedisLockBackend blocking = new RedisLockBackend(newFactory());
		this.backends.add(blocking);
		String key = randomKey();
		AcquireResult acquired = await(async.tryAcquireAsync(key, "owner-1", TTL));
		assertThat(acquired.acquired()).isTrue();
		assertThat(raw.opsForValue().get("{" + key + "}")).isEqualTo("owner-1");
		assertThat(raw.opsForValue().get("{" + key + "}:fence")).isEqualTo(Long.toString(acquired.fencingToken()));
		assertThat(raw.getExpire("{" + key + "}:fence", TimeUnit.HOURS)).isBetween(23L, 24L);
		AcquireResult held = await(async.tryAcquireAsync(key, "owner-2", TTL));
		assertThat(held.acquired()).isFalse();
		assertThat(held.holderRemainingMillis()).isBetween(TTL.toMillis() - 2_000, TTL.toMillis());
		assertThat(blocking.tryAcquire(key, "owner-2", TTL).acquired()).isFalse();
		assertThat(await(async.releaseAsync(key, "owner-2"))).isFalse();
		assertThat(await(async.releaseAsync(key, "owner-1"))).isTrue();
		assertThat(await(async.releaseAsync(key, "owner-1"))).isFalse();
		AcquireResult next = blocking.tryAcquire(key, "owner-3", TTL);
		assertThat(next.fencingToken()).isGreaterThan(acquired.fencingToken());
		assertThat(blocking.release(key, "owner-3")).isTrue();
		assertThat(await(async.tryAcquireAsync(key, "owner-4", TTL)).fencingToken())
			.isGreaterThan(next.fencingToken());
	}

	@Test
	void asyncCallsSendTheScriptsAgainWhenRedisForgetsThem() throws Exception {
		AsyncLockBackend async = (AsyncLockBackend) newBackend();
		String key = randomKey();
		flushScripts();
		assertThat(await(async.tryAcquireAsync(key, "owner", TTL)).acquired()).isTrue();
		flushScripts();
		assertThat(await(async.releaseAsync(key, "owner"))).isTrue();
	}

	@Test
	void releaseWithACallbackAnswersOnceWithTheReplyOrTheFailure() throws Exception {
		AsyncLockBackend async = (AsyncLockBackend) newBackend();
		String key = randomKey();
		assertThat(await(async.tryAcquireAsync(key, "owner-1", TTL)).acquired()).isTrue();
		assertThat(releasedByCallback(async, key, "owner-2")).isFalse();
		flushScripts();
		assertThat(releasedByCallback(async, key, "owner-1")).isTrue();
		assertThat(raw.hasKey("{" + key + "}")).isFalse();
		assertThat(releasedByCallback(async, key, "owner-1")).isFalse();
		String notALock = randomKey();
		raw.opsForHash().put("{" + notALock + "}", "field", "value");
		assertThatExceptionOfType(ExecutionException.class)
			.isThrownBy(() -> releasedByCallback(async, notALock, "owner-1"))
			.havingCause()
			.isInstanceOf(LockBackendException.class)
			.withMessageContaining("release")
			.withMessageContaining(notALock);
		assertThatExceptionOfType(ExecutionException.class)
			.isThrownBy(() -> releasedByCallback(async, "a{b}", "owner-1"))
			.havingCause()
			.isInstanceOf(IllegalArgumentException.class);
	}

	@Test
	void asyncFailuresCompleteTheStageInsteadOfThrowing() {
		AsyncLockBackend async = (AsyncLockBackend) newBackend();
		String key = randomKey();
		raw.opsForValue().set("{" + key + "}:fence", Long.toString(RedisLockBackend.MAX_TOKEN - 1));
		CompletableFuture<AcquireResult> tooLarge = async.tryAcquireAsync(key, "owner", TTL).toCompletableFuture();
		assertThatExceptionOfType(Exception.class).isThrownBy(() -> tooLarge.get(5, TimeUnit.SECONDS))
			.havingCause()
			.isInstanceOf(LockBackendException.class)
			.withMessageContaining(key)
			.withMessageContaining("acquire")
			.withMessageContaining("2^53");
		CompletableFuture<AcquireResult> braces = async.tryAcquireAsync("a{b}", "owner", TTL).toCompletableFuture();
		assertThat(braces).isCompletedExceptionally();
	}

	@Test
	void asyncCallersOnTwoInstancesNeverHoldTheLockAtOnce() throws Exception {
		String prefix = "async-" + UUID.randomUUID() + ":";
		try (DefaultLockTemplate first = new DefaultLockTemplate(newBackend(), LockSettings.defaults().withKeyPrefix(prefix));
				DefaultLockTemplate second = new DefaultLockTemplate(newBackend(),
						LockSettings.defaults().withKeyPrefix(prefix))) {
			assertThat(first.supportsNonBlocking()).isTrue();
			AtomicInteger inside = new AtomicInteger();
			AtomicInteger most = new AtomicInteger();
			LockOptions options = LockOptions.defaults().waitTime(Duration.ofSeconds(30));
			List<CompletableFuture<Void>> all = new ArrayList<>();
			for (int i = 0; i < 20; i++) {
				DefaultLockTemplate template = (i % 2 == 0) ? first : second;
				all.add(template.tryAcquireAsync("shared", null, options).thenCompose((lease) -> {
					assertThat(lease).isNotNull();
					most.accumulateAndGet(inside.incrementAndGet(), Math::max);
					return CompletableFuture.runAsync(() -> inside.decrementAndGet(),
							CompletableFuture.delayedExecutor(5, TimeUnit.MILLISECONDS))
						.thenCompose((ignored) -> template.releaseAsync(lease));
				}));
			}
			CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).get(30, TimeUnit.SECONDS);
			assertThat(most).hasValue(1);
			Lease last = first.tryAcquire("shared", null, LockOptions.defaults()).orElseThrow();
			last.close();
		}
	}

	private static <T> T await(CompletionStage<T> stage) throws Exception {
		return stage.toCompletableFuture().get(5, TimeUnit.SECONDS);
	}

	/** The release's answer through the callback, which must be called exactly once. */
	private static @Nullable Boolean releasedByCallback(AsyncLockBackend async, String key, String owner)
			throws Exception {
		CompletableFuture<@Nullable Boolean> answer = new CompletableFuture<>();
		AtomicInteger calls = new AtomicInteger();
		async.releaseAsync(key, owner, (released, ex) -> {
			calls.incrementAndGet();
			if (ex != null) {
				answer.completeExceptionally(ex);
			}
			else {
				answer.complete(released);
			}
		});
		try {
			return answer.get(5, TimeUnit.SECONDS);
		}
		finally {
			assertThat(calls).hasValue(1);
		}
	}

	private static void flushScripts() {
		raw.execute((RedisCallback<Object>) (connection) -> {
			connection.scriptingCommands().scriptFlush();
			return null;
		});
	}

	private RedisLockBackend newBackend() {
		RedisLockBackend backend = RedisLockBackend.of(newFactory(), RedisLockBackend.DEFAULT_CHANNEL);
		this.backends.add(backend);
		return backend;
	}

	private static LettuceConnectionFactory newFactory() {
		LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
		factories.add(factory);
		return factory;
	}

	private static String randomKey() {
		return "test:" + UUID.randomUUID();
	}

}
