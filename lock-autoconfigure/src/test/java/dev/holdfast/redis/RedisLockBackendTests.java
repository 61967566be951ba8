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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.async.RedisAsyncCommands;
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
import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

class RedisLockBackendTests {

	private static final Duration TTL = Duration.ofSeconds(10);

	/**
	 * Lease and poll interval of the waiting tests: a waiter that missed the release would sleep
	 * this long, so only the announcement can wake it within {@link #WAKE_BOUND}.
	 */
	private static final Duration SLOW_POLL = Duration.ofMinutes(1);

	/** Well under the poll fallback, with slack for a loaded machine. */
	private static final Duration WAKE_BOUND = Duration.ofSeconds(5);

	/** How long a waiter's record lasts: a release reserves the lock for a waiter recorded this long. */
	private static final Duration RECORD = Duration.ofSeconds(30);

	private static RedisServer server;

	private final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private final List<RedisLockBackend> backends = new ArrayList<>();

	private final Map<RedisServer, StringRedisTemplate> templates = new HashMap<>();

	/** Lock templates and raw subscribers, closed before the backends. */
	private final List<AutoCloseable> closeables = new ArrayList<>();

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		server.close();
	}

	@AfterEach
	void closeClients() throws Exception {
		for (AutoCloseable closeable : this.closeables) {
			closeable.close();
		}
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
	void asciiAndNonAsciiKeysAreStoredUnderTheirHashTaggedUtf8Names() {
		RedisLockBackend backend = newBackend(server);
		for (String key : new String[] { randomKey(), randomKey() + ":Zürich-東京" }) {
			assertThat(backend.tryAcquire(key, "owner-1", TTL).acquired()).isTrue();
			assertThat(raw(server).opsForValue().get("{" + key + "}")).isEqualTo("owner-1");
			assertThat(raw(server).hasKey("{" + key + "}:fence")).isTrue();
			assertThat(backend.release(key, "owner-1")).isTrue();
			assertThat(raw(server).hasKey("{" + key + "}")).isFalse();
		}
	}

	@Test
	void theSameOwnersAttemptAgainIsThatAcquisitionNotASecondHold() {
		// An owner token is one acquisition: an attempt sent again (Lettuce resends a command
		// whose answer was lost) answers as the first did; one release frees the lock.
		RedisLockBackend backend = newBackend(server);
		RedisLockBackend other = newBackend(server);
		String key = randomKey();
		AcquireResult first = backend.tryAcquire(key, "owner-1", TTL);
		assertThat(first.acquired()).isTrue();
		AcquireResult again = backend.tryAcquire(key, "owner-1", TTL);
		assertThat(again.acquired()).isTrue();
		assertThat(again.fencingToken()).as("the first attempt's token").isEqualTo(first.fencingToken());
		assertThat(other.tryAcquire(key, "owner-2", TTL).acquired()).isFalse();
		assertThat(backend.release(key, "owner-1")).isTrue();
		assertThat(other.tryAcquire(key, "owner-2", TTL).acquired()).isTrue();
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
	void reservationEventReachesSubscribersOfOtherClientsUntilTheyUnsubscribe() throws Exception {
		RedisLockBackend listening = newBackend(server);
		RedisLockBackend releasing = newBackend(server);
		BlockingQueue<String> received = new LinkedBlockingQueue<>();
		AutoCloseable subscription = listening.subscribe(received::add);
		await().atMost(Duration.ofSeconds(10)).until(listening::isListening);
		String key = randomKey();
		releasing.tryAcquire(key, "owner", TTL);
		listening.tryAcquireWaiting(key, "waiter", TTL, RECORD);
		releasing.release(key, "owner");
		assertThat(received.poll(5, TimeUnit.SECONDS)).isEqualTo(key);
		// The reserved waiter claims the lock; a release by a non-owner publishes nothing.
		assertThat(listening.tryAcquireWaiting(key, "waiter", TTL, RECORD).acquired()).isTrue();
		releasing.tryAcquireWaiting(key, "next-waiter", TTL, RECORD);
		assertThat(listening.release(key, "not-the-owner")).isFalse();
		subscription.close();
		// Reserves the lock for the next waiter and publishes it, to nobody here.
		assertThat(listening.release(key, "waiter")).isTrue();
		assertThat(raw(server).opsForValue().get("{" + key + "}")).isEqualTo("*next-waiter");
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
		listening.tryAcquireWaiting(key, "waiter", TTL, RECORD);
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
			// after an expiring round, wait for Redis to expire the previous holder; the first try
			// is at once (Awaitility's default first poll after 100 ms made this loop take 30 s)
			AcquireResult result = await().atMost(Duration.ofSeconds(2))
				.pollDelay(Duration.ZERO)
				.pollInterval(Duration.ofMillis(10))
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

	@Test
	void onlyAReleaseThatReservesTheLockPublishes() throws Exception {
		String channel = "test:channel:" + UUID.randomUUID();
		BlockingQueue<String> published = subscribeRaw(channel);
		RedisLockBackend first = newNonBlockingBackend(channel);
		RedisLockBackend second = newNonBlockingBackend(channel);
		AsyncLockBackend async = (AsyncLockBackend) first;
		String uncontended = randomKey();
		for (int i = 0; i < 20; i++) {
			assertThat(first.tryAcquire(uncontended, "owner-" + i, TTL).acquired()).isTrue();
			assertThat(first.release(uncontended, "owner-" + i)).isTrue();
			assertThat(join(async.tryAcquireAsync(uncontended, "async-" + i, TTL)).acquired()).isTrue();
			assertThat(join(async.releaseAsync(uncontended, "async-" + i))).isTrue();
		}
		String contended = randomKey();
		// Refused try-once attempts are not recorded: the release frees the lock, unannounced.
		assertThat(first.tryAcquire(contended, "holder-0", TTL).acquired()).isTrue();
		assertThat(second.tryAcquire(contended, "once", TTL).acquired()).isFalse();
		assertThat(join(async.tryAcquireAsync(contended, "async-once", TTL)).acquired()).isFalse();
		assertThat(first.release(contended, "holder-0")).isTrue();
		assertThat(raw(server).hasKey("{" + contended + "}")).isFalse();
		assertThat(first.tryAcquire(contended, "holder", TTL).acquired()).isTrue();
		assertThat(second.tryAcquireWaiting(contended, "waiter", TTL, RECORD).acquired()).isFalse();
		assertThat(first.release(contended, "holder")).isTrue();
		// One subscriber gets messages in publish order: an unreserving release would come first.
		assertThat(published.poll(5, TimeUnit.SECONDS)).isEqualTo("{" + contended + "}waiter");
		assertThat(second.tryAcquireWaiting(contended, "waiter", TTL, RECORD).acquired()).isTrue();
		assertThat(second.release(contended, "waiter")).isTrue();
		assertThat(join(async.tryAcquireAsync(contended, "async-holder", TTL)).acquired()).isTrue();
		assertThat(second.tryAcquireWaiting(contended, "async-waiter", TTL, RECORD).acquired()).isFalse();
		assertThat(join(async.releaseAsync(contended, "async-holder"))).isTrue();
		assertThat(published.poll(5, TimeUnit.SECONDS)).isEqualTo("{" + contended + "}async-waiter");
		assertThat(published.poll(200, TimeUnit.MILLISECONDS)).isNull();
	}

	@Test
	void aContendedLockStaysRenewableAndReleasableByItsOwnerOnly() {
		RedisLockBackend first = newNonBlockingBackend(RedisLockBackend.DEFAULT_CHANNEL);
		RedisLockBackend second = newNonBlockingBackend(RedisLockBackend.DEFAULT_CHANNEL);
		String key = randomKey();
		first.tryAcquire(key, "owner", TTL);
		assertThat(raw(server).opsForValue().get("{" + key + "}")).isEqualTo("owner");
		assertThat(second.tryAcquireWaiting(key, "other", TTL, RECORD).acquired()).isFalse();
		assertThat(second.tryAcquireWaiting(key, "other", TTL, RECORD).acquired()).isFalse();
		// A waiter's attempts record it beside the lock and leave the holder's value alone.
		assertThat(raw(server).opsForValue().get("{" + key + "}")).as("the holder's value").isEqualTo("owner");
		assertThat(raw(server).opsForZSet().range("{" + key + "}:waiters", 0, -1)).as("recorded once")
			.containsExactly("other");
		assertThat(second.renew(List.of(new HeldLock(key, "other", Duration.ofMinutes(5))))).isEmpty();
		assertThat(first.renew(List.of(new HeldLock(key, "owner", Duration.ofMinutes(5))))).containsExactly(key);
		assertThat(raw(server).getExpire("{" + key + "}")).isBetween(290L, 300L);
		assertThat(second.release(key, "other")).isFalse();
		assertThat(raw(server).opsForValue().get("{" + key + "}")).isEqualTo("owner");
		assertThat(first.release(key, "owner")).isTrue();
		// Reserved for the recorded waiter, not freed: it alone can take it, then release it.
		assertThat(raw(server).opsForValue().get("{" + key + "}")).isEqualTo("*other");
		assertThat(first.renew(List.of(new HeldLock(key, "owner", TTL)))).as("renewal by the former owner").isEmpty();
		assertThat(first.release(key, "owner")).as("a second release by the former owner").isFalse();
		assertThat(second.tryAcquireWaiting(key, "other", TTL, RECORD).acquired()).isTrue();
		assertThat(second.release(key, "other")).isTrue();
		assertThat(raw(server).hasKey("{" + key + "}")).isFalse();
	}

	@Test
	void ownersStartingWithTheReservationMarkAreRejected() {
		RedisLockBackend backend = newNonBlockingBackend(RedisLockBackend.DEFAULT_CHANNEL);
		String key = randomKey();
		backend.tryAcquire(key, "owner", TTL);
		backend.tryAcquireWaiting(key, "w", TTL, Duration.ofSeconds(5));
		backend.release(key, "owner");
		// "*w" is now the value of the lock, reserved for waiter "w": an owner of that name must
		// not take, release or renew it.
		assertThat(raw(server).opsForValue().get("{" + key + "}")).isEqualTo("*w");
		assertThatIllegalArgumentException().isThrownBy(() -> backend.release(key, "*w"))
			.withMessageContaining("'*w'")
			.withMessageContaining("must not start with '*'");
		assertThatIllegalArgumentException()
			.isThrownBy(() -> backend.renew(List.of(new HeldLock(key, "*w", TTL))))
			.withMessageContaining("'*w'");
		assertThatIllegalArgumentException().isThrownBy(() -> backend.tryAcquire(key, "*w", TTL))
			.withMessageContaining("'*w'");
		assertThat(((AsyncLockBackend) backend).releaseAsync(key, "*w")).isCompletedExceptionally();
		assertThat(raw(server).opsForValue().get("{" + key + "}")).isEqualTo("*w");
	}

	@Test
	void blockingWaiterInAnotherInstanceWakesPromptlyOnRelease() throws Exception {
		DefaultLockTemplate holder = newTemplate(newNonBlockingBackend(RedisLockBackend.DEFAULT_CHANNEL));
		RedisLockBackend waiterBackend = newNonBlockingBackend(RedisLockBackend.DEFAULT_CHANNEL);
		DefaultLockTemplate waiter = newTemplate(waiterBackend);
		// A plain name: the template keeps it as the key.
		String name = "wake-" + UUID.randomUUID();
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
		// Pub/sub is best effort: what is published before the subscription listens is lost.
		await().atMost(Duration.ofSeconds(5)).until(waiterBackend::isListening);
		long releasedAt = System.nanoTime();
		held.close();
		long wake = acquiredAt.get(30, TimeUnit.SECONDS) - releasedAt;
		assertThat(Duration.ofNanos(wake)).as("wake-up after release, polling every %s", SLOW_POLL)
			.isLessThan(WAKE_BOUND);
	}

	@Test
	void nonBlockingWaiterInAnotherInstanceWakesPromptlyOnRelease() throws Exception {
		DefaultLockTemplate holder = newTemplate(newNonBlockingBackend(RedisLockBackend.DEFAULT_CHANNEL));
		RedisLockBackend waiterBackend = newNonBlockingBackend(RedisLockBackend.DEFAULT_CHANNEL);
		DefaultLockTemplate waiter = newTemplate(waiterBackend);
		assertThat(waiter.supportsNonBlocking()).isTrue();
		// A plain name: the template keeps it as the key.
		String name = "wake-" + UUID.randomUUID();
		Lease held = holder.acquire(name, null, LockOptions.defaults().waitTime(Duration.ZERO));
		CompletableFuture<Lease> waiting = waiter.tryAcquireAsync(name, null,
				LockOptions.defaults().waitTime(SLOW_POLL));
		// The waiter listens before its first attempt, and that attempt records it.
		await().atMost(Duration.ofSeconds(5))
			.alias("the waiter's attempt records it")
			.until(() -> raw(server).opsForZSet().zCard("{" + name + "}:waiters") == 1);
		await().atMost(Duration.ofSeconds(5)).until(waiterBackend::isListening);
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
		RedisLockBackend backend = newNonBlockingBackend(RedisLockBackend.DEFAULT_CHANNEL);
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
		flushAll();
		long afterFlush = backend.tryAcquire(key, "after-flush", TTL).fencingToken();
		assertThat(afterFlush).isGreaterThan(last);
		backend.release(key, "after-flush");
		flushAll();
		assertThat(join(async.tryAcquireAsync(key, "async-after-flush", TTL)).fencingToken())
			.isGreaterThan(afterFlush);
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

	private void flushAll() {
		raw(server).execute((RedisCallback<Object>) (connection) -> {
			connection.serverCommands().flushAll();
			return null;
		});
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

	private DefaultLockTemplate newTemplate(RedisLockBackend backend) {
		DefaultLockTemplate template = new DefaultLockTemplate(backend,
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(SLOW_POLL).withPollInterval(SLOW_POLL));
		this.closeables.add(template);
		return template;
	}

	private static <T> T join(CompletionStage<T> stage) {
		return stage.toCompletableFuture().orTimeout(5, TimeUnit.SECONDS).join();
	}

	private RedisLockBackend newNonBlockingBackend(String channel) {
		RedisLockBackend backend = RedisLockBackend.of(newFactory(server), channel);
		assertThat(backend).isInstanceOf(AsyncLockBackend.class);
		this.backends.add(backend);
		return backend;
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
