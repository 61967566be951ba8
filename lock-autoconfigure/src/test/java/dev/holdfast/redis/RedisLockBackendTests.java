package dev.holdfast.redis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.api.async.RedisAsyncCommands;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.testsupport.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

class RedisLockBackendTests {

	private static final Duration TTL = Duration.ofSeconds(10);

	private static RedisServer server;

	private final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private final List<RedisLockBackend> backends = new ArrayList<>();

	private final Map<RedisServer, StringRedisTemplate> templates = new HashMap<>();

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		server.close();
	}

	@AfterEach
	void closeClients() {
		this.backends.forEach(RedisLockBackend::close);
		this.factories.forEach(LettuceConnectionFactory::destroy);
	}

	@Test
	void acquireTakesAFreeLockAndReportsTheHoldersTtlToOthers() {
		RedisLockBackend first = newBackend(server);
		RedisLockBackend second = newBackend(server);
		String key = randomKey();
		AcquireResult acquired = first.tryAcquire(key, "owner-1", TTL);
		assertThat(acquired.acquired()).isTrue();
		assertThat(acquired.fencingToken()).isPositive();
		assertThat(raw(server).opsForValue().get("{" + key + "}")).isEqualTo("owner-1");
		AcquireResult held = second.tryAcquire(key, "owner-2", TTL);
		assertThat(held.acquired()).isFalse();
		assertThat(held.holderRemainingMillis()).isBetween(TTL.toMillis() - 2_000, TTL.toMillis());
		assertThat(raw(server).getExpire("{" + key + "}:fence", TimeUnit.HOURS)).isBetween(23L, 24L);
	}

	@Test
	void theSameOwnerCannotAcquireTwice() {
		RedisLockBackend backend = newBackend(server);
		String key = randomKey();
		assertThat(backend.tryAcquire(key, "owner-1", TTL).acquired()).isTrue();
		assertThat(backend.tryAcquire(key, "owner-1", TTL).acquired()).isFalse();
	}

	@Test
	void releaseByAnotherOwnerIsIgnored() {
		RedisLockBackend first = newBackend(server);
		RedisLockBackend second = newBackend(server);
		String key = randomKey();
		first.tryAcquire(key, "owner-1", TTL);
		assertThat(second.release(key, "owner-2")).isFalse();
		assertThat(second.tryAcquire(key, "owner-2", TTL).acquired()).isFalse();
		assertThat(first.release(key, "owner-1")).isTrue();
		assertThat(first.release(key, "owner-1")).isFalse();
		assertThat(second.tryAcquire(key, "owner-2", TTL).acquired()).isTrue();
	}

	@Test
	void expiredLockCanBeTakenOver() throws InterruptedException {
		RedisLockBackend first = newBackend(server);
		RedisLockBackend second = newBackend(server);
		String key = randomKey();
		long firstToken = first.tryAcquire(key, "owner-1", Duration.ofMillis(50)).fencingToken();
		AcquireResult takeover = await().atMost(Duration.ofSeconds(2))
			.until(() -> second.tryAcquire(key, "owner-2", TTL), AcquireResult::acquired);
		assertThat(takeover.fencingToken()).isGreaterThan(firstToken);
		assertThat(first.release(key, "owner-1")).isFalse();
	}

	@Test
	void renewExtendsOnlyLocksStillHeldByTheirOwnerInOneScriptCall() {
		RedisLockBackend backend = newBackend(server);
		RedisLockBackend other = newBackend(server);
		String prefix = randomKey();
		List<HeldLock> locks = new ArrayList<>();
		Set<String> expected = new HashSet<>();
		for (int i = 0; i < 1_000; i++) {
			String key = prefix + ":" + i;
			if (i % 100 == 7) {
				// Held by someone else: must not be renewed.
				other.tryAcquire(key, "thief-" + i, TTL);
			}
			else if (i % 100 == 9) {
				// Never acquired (expired): must not be renewed, nor created.
			}
			else {
				assertThat(backend.tryAcquire(key, "owner-" + i, Duration.ofSeconds(5)).acquired()).isTrue();
				expected.add(key);
			}
			locks.add(new HeldLock(key, "owner-" + i, Duration.ofMinutes(5)));
		}
		// The first renewal ever sends the script (NOSCRIPT, then EVAL); later ones run it by SHA.
		backend.renew(List.of(new HeldLock(prefix + ":warm-up", "nobody", TTL)));
		long evalShaBefore = scriptCalls(server, "evalsha");
		long evalBefore = scriptCalls(server, "eval");
		Set<String> renewed = backend.renew(locks);
		assertThat(scriptCalls(server, "evalsha") - evalShaBefore).isOne();
		assertThat(scriptCalls(server, "eval") - evalBefore).isZero();
		assertThat(renewed).isEqualTo(expected);
		StringRedisTemplate raw = raw(server);
		assertThat(raw.getExpire("{" + prefix + ":0}")).isBetween(290L, 300L);
		assertThat(raw.getExpire("{" + prefix + ":7}")).isBetween(5L, 10L);
		assertThat(raw.hasKey("{" + prefix + ":9}")).isFalse();
	}

	@Test
	void renewOfNothingIsEmpty() {
		assertThat(newBackend(server).renew(List.of())).isEmpty();
	}

	@Test
	void contendedReleaseEventReachesSubscribersOfOtherClientsUntilTheyUnsubscribe() throws Exception {
		RedisLockBackend listening = newBackend(server);
		RedisLockBackend releasing = newBackend(server);
		BlockingQueue<String> received = new LinkedBlockingQueue<>();
		AutoCloseable subscription = listening.subscribe(received::add);
		await().atMost(Duration.ofSeconds(10)).until(listening::isListening);
		String key = randomKey();
		releasing.tryAcquire(key, "owner", TTL);
		listening.tryAcquire(key, "waiter", TTL);
		releasing.release(key, "owner");
		assertThat(received.poll(5, TimeUnit.SECONDS)).isEqualTo(key);
		// A release by a non-owner publishes nothing.
		releasing.tryAcquire(key, "owner", TTL);
		listening.tryAcquire(key, "waiter", TTL);
		releasing.release(key, "not-the-owner");
		subscription.close();
		releasing.release(key, "owner");
		assertThat(received.poll(300, TimeUnit.MILLISECONDS)).isNull();
	}

	@Test
	void manySubscribersShareOneSubscription() throws Exception {
		String channel = "test:channel:" + UUID.randomUUID();
		RedisLockBackend listening = newBackend(server, channel);
		BlockingQueue<String> first = new LinkedBlockingQueue<>();
		BlockingQueue<String> second = new LinkedBlockingQueue<>();
		listening.subscribe(first::add);
		listening.subscribe((key) -> {
			throw new IllegalStateException("a failing listener must not stop the others");
		});
		listening.subscribe(second::add);
		await().atMost(Duration.ofSeconds(10)).until(listening::isListening);
		assertThat(subscribers(channel)).isOne();
		String key = randomKey();
		RedisLockBackend releasing = newBackend(server, channel);
		releasing.tryAcquire(key, "owner", TTL);
		listening.tryAcquire(key, "waiter", TTL);
		releasing.release(key, "owner");
		assertThat(first.poll(5, TimeUnit.SECONDS)).isEqualTo(key);
		assertThat(second.poll(5, TimeUnit.SECONDS)).isEqualTo(key);
		listening.close();
		assertThat(subscribers(channel)).isZero();
	}

	@Test
	void fencingTokensStrictlyIncreaseAcrossHoldersReleaseAndExpiry() throws InterruptedException {
		RedisLockBackend first = newBackend(server);
		RedisLockBackend second = newBackend(server);
		String key = randomKey();
		long last = 0;
		for (int i = 0; i < 300; i++) {
			RedisLockBackend backend = (i % 2 == 0) ? first : second;
			boolean expire = i % 50 == 0;
			String owner = "owner-" + i;
			// after an expiring round, wait for Redis to expire the previous holder
			AcquireResult result = await().atMost(Duration.ofSeconds(2))
				.until(() -> backend.tryAcquire(key, owner, expire ? Duration.ofMillis(5) : TTL), AcquireResult::acquired);
			assertThat(result.fencingToken()).isGreaterThan(last);
			last = result.fencingToken();
			if (!expire) {
				backend.release(key, owner);
			}
		}
	}

	@Test
	void fencingTokensIncreaseAcrossARestartOfRedisWithoutPersistence() {
		try (RedisServer volatileRedis = RedisServer.start(false)) {
			RedisLockBackend backend = newBackend(volatileRedis);
			String key = randomKey();
			long last = 0;
			for (int i = 0; i < 100; i++) {
				last = backend.tryAcquire(key, "owner-" + i, TTL).fencingToken();
				backend.release(key, "owner-" + i);
			}
			volatileRedis.restart();
			AcquireResult afterRestart = acquireEventually(backend, key, "owner-after");
			assertThat(raw(volatileRedis).hasKey("{" + key + "}:fence")).isTrue();
			assertThat(afterRestart.fencingToken()).isGreaterThan(last);
		}
	}

	@Test
	void fencingCounterSurvivesARestartOfPersistentRedis() {
		try (RedisServer persistentRedis = RedisServer.start(true)) {
			RedisLockBackend backend = newBackend(persistentRedis);
			String key = randomKey();
			long token = backend.tryAcquire(key, "owner-1", TTL).fencingToken();
			backend.release(key, "owner-1");
			// A counter far ahead of Redis's clock: only the persisted counter can keep order now.
			long ahead = token + 3_600_000_000L;
			raw(persistentRedis).opsForValue().set("{" + key + "}:fence", Long.toString(ahead));
			persistentRedis.restart();
			AcquireResult afterRestart = acquireEventually(backend, key, "owner-2");
			assertThat(afterRestart.fencingToken()).isEqualTo(ahead + 1);
		}
	}

	@Test
	void fencingTokensStayBelowTwoToThe53() {
		RedisLockBackend backend = newBackend(server);
		String key = randomKey();
		raw(server).opsForValue().set("{" + key + "}:fence", Long.toString(RedisLockBackend.MAX_TOKEN - 1));
		assertThatExceptionOfType(LockBackendException.class)
			.isThrownBy(() -> backend.tryAcquire(key, "owner", TTL))
			.withMessageContaining(key)
			.withMessageContaining("acquire")
			.withMessageContaining("2^53");
		assertThat(raw(server).hasKey("{" + key + "}")).isFalse();
		raw(server).opsForValue().set("{" + key + "}:fence", Long.toString(RedisLockBackend.MAX_TOKEN - 2));
		assertThat(backend.tryAcquire(key, "owner", TTL).fencingToken()).isEqualTo(RedisLockBackend.MAX_TOKEN - 1);
	}

	@Test
	void scriptsAreSentAgainWhenRedisForgetsThem() {
		RedisLockBackend backend = newBackend(server);
		String key = randomKey();
		raw(server).execute((RedisCallback<Object>) (connection) -> {
			connection.scriptingCommands().scriptFlush();
			return null;
		});
		assertThat(backend.tryAcquire(key, "owner", TTL).acquired()).isTrue();
		raw(server).execute((RedisCallback<Object>) (connection) -> {
			connection.scriptingCommands().scriptFlush();
			return null;
		});
		assertThat(backend.renew(List.of(new HeldLock(key, "owner", TTL)))).containsExactly(key);
		assertThat(backend.release(key, "owner")).isTrue();
	}

	@Test
	void keysWithBracesAndTinyTtlsAreRejected() {
		RedisLockBackend backend = newBackend(server);
		assertThatIllegalArgumentException().isThrownBy(() -> backend.tryAcquire("a{b}", "owner", TTL))
			.withMessageContaining("a{b}");
		assertThatIllegalArgumentException().isThrownBy(() -> backend.tryAcquire("a", "owner", Duration.ZERO))
			.withMessageContaining("ttl");
	}

	@Test
	void subscribingToAClosedBackendFails() {
		RedisLockBackend backend = newBackend(server);
		backend.close();
		assertThatIllegalStateException()
			.isThrownBy(() -> backend.subscribe((key) -> {
			}));
	}

	private long subscribers(String channel) {
		return raw(server).execute((RedisCallback<Long>) (connection) -> {
			RedisAsyncCommands<byte[], byte[]> commands = (RedisAsyncCommands<byte[], byte[]>) connection
				.getNativeConnection();
			try {
				return commands.pubsubNumsub(bytes(channel)).get(2, TimeUnit.SECONDS).values().iterator().next();
			}
			catch (Exception ex) {
				throw new IllegalStateException(ex);
			}
		});
	}

	private static byte[] bytes(String value) {
		return value.getBytes(StandardCharsets.UTF_8);
	}

	private static AcquireResult acquireEventually(RedisLockBackend backend, String key, String owner) {
		long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
		while (true) {
			try {
				AcquireResult result = backend.tryAcquire(key, owner, TTL);
				assertThat(result.acquired()).isTrue();
				return result;
			}
			catch (LockBackendException ex) {
				if (System.nanoTime() > deadline) {
					throw ex;
				}
			}
		}
	}

	private long scriptCalls(RedisServer redis, String command) {
		Properties stats = raw(redis)
			.execute((RedisCallback<Properties>) (connection) -> connection
				.serverCommands()
				.info("commandstats"));
		String line = stats.getProperty("cmdstat_" + command);
		if (line == null) {
			return 0;
		}
		long calls = 0;
		for (String field : line.split(",")) {
			String[] nameAndValue = field.split("=");
			if (nameAndValue[0].endsWith("calls")) {
				calls += Long.parseLong(nameAndValue[1]);
			}
		}
		return calls;
	}

	private RedisLockBackend newBackend(RedisServer redis) {
		return newBackend(redis, RedisLockBackend.DEFAULT_CHANNEL);
	}

	private RedisLockBackend newBackend(RedisServer redis, String channel) {
		RedisLockBackend backend = new RedisLockBackend(newFactory(redis), channel);
		this.backends.add(backend);
		return backend;
	}

	private StringRedisTemplate raw(RedisServer redis) {
		return this.templates.computeIfAbsent(redis, (key) -> RedisClients.template(newFactory(redis)));
	}

	private LettuceConnectionFactory newFactory(RedisServer redis) {
		LettuceConnectionFactory factory = RedisClients.connectionFactory(redis);
		this.factories.add(factory);
		return factory;
	}

	private static String randomKey() {
		return "test:" + UUID.randomUUID();
	}

}
