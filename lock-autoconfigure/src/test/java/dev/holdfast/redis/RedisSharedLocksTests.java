package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.ClusterLocks.BackendLock;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.awaitility.Awaitility.await;

/**
 * Read holds ({@code SharedLocks}) of the Redis backend at the SPI level, on a real Redis, through
 * Lettuce (the non-blocking backend) and Jedis: rules RWL-20 to RWL-27.
 */
class RedisSharedLocksTests {

	private static final Duration TTL = Duration.ofSeconds(10);

	private static final Duration ONCE = Duration.ZERO;

	private static final Duration RECORD = Duration.ofSeconds(30);

	/** Well under every lease and record of these tests, with slack for a loaded machine. */
	private static final Duration PROMPT = Duration.ofSeconds(5);

	private static RedisServer server;

	private final List<DisposableBean> factories = new ArrayList<>();

	private final List<RedisLockBackend> backends = new ArrayList<>();

	private final List<AutoCloseable> subscriptions = new ArrayList<>();

	private final String key = "rw-" + UUID.randomUUID();

	private final String lockKey = "{" + this.key + "}";

	private StringRedisTemplate raw;

	enum Client {

		LETTUCE, JEDIS

	}

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
		for (AutoCloseable subscription : this.subscriptions) {
			subscription.close();
		}
		this.backends.forEach(RedisLockBackend::close);
		for (DisposableBean factory : this.factories) {
			factory.destroy();
		}
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void readersOverlapAndAWriterIsRefusedUntilTheLastLeaves(Client client) {
		RedisLockBackend first = backend(client);
		RedisLockBackend second = backend(client);
		AcquireResult one = first.tryAcquireShared(this.key, "r1", TTL, ONCE);
		AcquireResult two = second.tryAcquireShared(this.key, "r2", TTL, ONCE);
		assertThat(one.acquired()).isTrue();
		assertThat(two.acquired()).as("readers overlap").isTrue();
		assertThat(two.fencingToken()).isEqualTo(one.fencingToken());
		assertThat(raw().opsForValue().get(this.lockKey)).isEqualTo("~readers");
		AcquireResult writer = second.tryAcquire(this.key, "w", TTL);
		assertThat(writer.acquired()).isFalse();
		assertThat(writer.holderRemainingMillis()).isBetween(1L, TTL.toMillis());
		assertThat(first.tryAcquireWaiting(this.key, "w", TTL, RECORD).acquired()).isFalse();
		assertThat(first.withdraw(this.key, "w")).isTrue();
		assertThat(first.release(this.key, "r1")).isTrue();
		assertThat(first.release(this.key, "r1")).as("released once").isFalse();
		assertThat(second.tryAcquire(this.key, "w", TTL).acquired()).as("one reader left").isFalse();
		assertThat(second.release(this.key, "r2")).isTrue();
		assertThat(raw().hasKey(this.lockKey + ":readers")).isFalse();
		AcquireResult taken = second.tryAcquire(this.key, "w", TTL);
		assertThat(taken.acquired()).isTrue();
		assertThat(taken.fencingToken()).isGreaterThan(one.fencingToken());
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void aReaderIsRefusedWhileTheLockIsWriteHeld(Client client) {
		RedisLockBackend backend = backend(client);
		assertThat(backend.tryAcquire(this.key, "w", TTL).acquired()).isTrue();
		AcquireResult refused = backend.tryAcquireShared(this.key, "r", TTL, ONCE);
		assertThat(refused.acquired()).isFalse();
		assertThat(refused.holderRemainingMillis()).isBetween(1L, TTL.toMillis());
		assertThat(raw().hasKey(this.lockKey + ":readers")).isFalse();
		assertThat(raw().hasKey(this.lockKey + ":readwait")).as("a try-once reader records nothing").isFalse();
		assertThat(backend.release(this.key, "r")).as("a refused reader holds nothing").isFalse();
		assertThat(backend.release(this.key, "w")).isTrue();
		assertThat(backend.tryAcquireShared(this.key, "r", TTL, ONCE).acquired()).isTrue();
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void aCrashedReaderFreesTheKeyWithinItsTtl(Client client) {
		RedisLockBackend backend = backend(client);
		// The crashed reader's entry lives 300 ms; the other, of 10 s, leaves: the lock expires
		// with the latest live entry, not with the longest ever granted.
		assertThat(backend.tryAcquireShared(this.key, "crashed", Duration.ofMillis(300), ONCE).acquired()).isTrue();
		assertThat(backend.tryAcquireShared(this.key, "long", TTL, ONCE).acquired()).isTrue();
		assertThat(backend.release(this.key, "long")).isTrue();
		long start = System.nanoTime();
		await().atMost(PROMPT).until(() -> backend.tryAcquire(this.key, "w", TTL).acquired());
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(PROMPT);
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void ownersStartingWithATildeAreRejected(Client client) {
		RedisLockBackend backend = backend(client);
		assertThatIllegalArgumentException().isThrownBy(() -> backend.tryAcquireShared(this.key, "~readers", TTL, ONCE));
		assertThatIllegalArgumentException().isThrownBy(() -> backend.tryAcquire(this.key, "~readers", TTL));
		assertThatIllegalArgumentException()
			.isThrownBy(() -> backend.tryAcquireShared(this.key, "r", TTL, Duration.ofMillis(-1)));
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void aWaitingWritersLiveRecordRefusesNewReadersAndAJoinUntilItWithdrawsOrGoesStale(Client client) {
		RedisLockBackend readers = backend(client);
		RedisLockBackend writers = backend(client);
		assertThat(readers.tryAcquireShared(this.key, "r1", TTL, ONCE).acquired()).isTrue();
		assertThat(writers.tryAcquireWaiting(this.key, "w", TTL, RECORD).acquired()).isFalse();
		AcquireResult newReader = readers.tryAcquireShared(this.key, "r2", TTL, ONCE);
		assertThat(newReader.acquired()).as("a new reader").isFalse();
		assertThat(newReader.holderRemainingMillis()).as("the writer's record's time").isBetween(TTL.toMillis(),
				RECORD.toMillis());
		assertThat(readers.tryAcquireShared(this.key, "r1", TTL, ONCE).acquired()).as("a join of the live entry")
			.isFalse();
		assertThat(writers.withdraw(this.key, "w")).isTrue();
		assertThat(readers.tryAcquireShared(this.key, "r2", TTL, ONCE).acquired()).as("after the withdrawal").isTrue();
		// A writer's record that goes stale stops refusing readers; also on a free lock.
		assertThat(writers.tryAcquireWaiting(this.key, "w2", TTL, Duration.ofMillis(300)).acquired()).isFalse();
		assertThat(readers.tryAcquireShared(this.key, "r3", TTL, ONCE).acquired()).isFalse();
		await().atMost(PROMPT).until(() -> readers.tryAcquireShared(this.key, "r3", TTL, ONCE).acquired());
		for (String reader : List.of("r1", "r2", "r3")) {
			assertThat(readers.release(this.key, reader)).isTrue();
		}
		assertThat(writers.tryAcquireWaiting(this.key, "w3", TTL, Duration.ofMillis(300)).acquired()).isTrue();
		assertThat(writers.release(this.key, "w3")).isTrue();
		assertThat(writers.tryAcquireWaiting(this.key, "w4", TTL, RECORD).acquired()).isTrue();
		assertThat(readers.tryAcquireShared(this.key, "r4", TTL, ONCE).acquired()).isFalse();
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void aResentSharedAttemptAnswersAsItsFirstRunDid(Client client) {
		RedisLockBackend backend = backend(client);
		AcquireResult first = backend.tryAcquireShared(this.key, "r", Duration.ofSeconds(2), ONCE);
		AcquireResult again = backend.tryAcquireShared(this.key, "r", TTL, ONCE);
		assertThat(again.acquired()).isTrue();
		assertThat(again.fencingToken()).isEqualTo(first.fencingToken());
		assertThat(raw().opsForZSet().zCard(this.lockKey + ":readers")).as("one entry").isOne();
		assertThat(raw().getExpire(this.lockKey, TimeUnit.MILLISECONDS)).as("the resend's ttl")
			.isGreaterThan(Duration.ofSeconds(2).toMillis());
		assertThat(backend.release(this.key, "r")).isTrue();
		assertThat(backend.tryAcquire(this.key, "w", TTL).acquired()).as("one release frees it").isTrue();
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void aJoinWithAShorterTtlNeverShortensTheEntryOrTheLock(Client client) {
		RedisLockBackend backend = backend(client);
		AcquireResult first = backend.tryAcquireShared(this.key, "r", TTL, ONCE);
		long before = raw().getExpire(this.lockKey, TimeUnit.MILLISECONDS);
		AcquireResult join = backend.tryAcquireShared(this.key, "r", Duration.ofMillis(200), ONCE);
		assertThat(join.acquired()).isTrue();
		assertThat(join.fencingToken()).isEqualTo(first.fencingToken());
		assertThat(raw().getExpire(this.lockKey, TimeUnit.MILLISECONDS)).as("the first take's expiry kept")
			.isGreaterThan(before - PROMPT.toMillis());
		assertThat(raw().getExpire(this.lockKey + ":readers", TimeUnit.MILLISECONDS))
			.isGreaterThan(before - PROMPT.toMillis());
		assertThat(backend.tryAcquire(this.key, "w", TTL).acquired()).as("still read-held").isFalse();
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void readerTokensLieBetweenTheWritesAroundThemAndTheFenceIsKept(Client client) {
		RedisLockBackend backend = backend(client);
		long write1 = backend.tryAcquire(this.key, "w1", TTL).fencingToken();
		backend.release(this.key, "w1");
		long read1 = backend.tryAcquireShared(this.key, "r1", TTL, ONCE).fencingToken();
		long read2 = backend.tryAcquireShared(this.key, "r2", TTL, ONCE).fencingToken();
		assertThat(read1).isEqualTo(write1).isEqualTo(read2);
		assertThat(raw().opsForValue().get(this.lockKey + ":fence")).isEqualTo(Long.toString(write1));
		backend.release(this.key, "r1");
		backend.release(this.key, "r2");
		assertThat(raw().opsForValue().get(this.lockKey + ":fence")).as("kept across the group")
			.isEqualTo(Long.toString(write1));
		long write2 = backend.tryAcquire(this.key, "w2", TTL).fencingToken();
		assertThat(write2).isGreaterThan(read1);
		backend.release(this.key, "w2");
		// The fence gone (its 24 h expiry, a flush): the forming reader stores one from Redis's clock.
		raw().delete(this.lockKey + ":fence");
		long read3 = backend.tryAcquireShared(this.key, "r3", TTL, ONCE).fencingToken();
		assertThat(read3).isGreaterThanOrEqualTo(write2);
		assertThat(raw().opsForValue().get(this.lockKey + ":fence")).isEqualTo(Long.toString(read3));
		assertThat(raw().getExpire(this.lockKey + ":fence", TimeUnit.HOURS)).isBetween(23L, 24L);
		backend.release(this.key, "r3");
		assertThat(backend.tryAcquire(this.key, "w3", TTL).fencingToken()).isGreaterThan(read3);
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void theLastReadersReleaseReservesTheLockForTheWaitingWriterAndAnnouncesIt(Client client) throws Exception {
		RedisLockBackend readers = backend(client);
		RedisLockBackend writers = backend(client);
		BlockingQueue<String> heard = new LinkedBlockingQueue<>();
		this.subscriptions.add(writers.subscribe((released) -> heard.add("released " + released),
				(reservedKey, owner) -> heard.add(reservedKey + " " + owner)));
		await().atMost(PROMPT).until(writers::isListening);
		long readToken = readers.tryAcquireShared(this.key, "r1", TTL, ONCE).fencingToken();
		readers.tryAcquireShared(this.key, "r2", TTL, ONCE);
		assertThat(writers.tryAcquireWaiting(this.key, "w", TTL, RECORD).acquired()).isFalse();
		assertThat(readers.release(this.key, "r1")).isTrue();
		assertThat(raw().opsForValue().get(this.lockKey)).isEqualTo("~readers");
		assertThat(readers.release(this.key, "r2")).isTrue();
		assertThat(raw().opsForValue().get(this.lockKey)).as("reserved").isEqualTo("*w");
		assertThat(raw().hasKey(this.lockKey + ":readers")).isFalse();
		assertThat(heard.poll(PROMPT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(this.key + " w");
		AcquireResult claimed = writers.tryAcquireWaiting(this.key, "w", TTL, RECORD);
		assertThat(claimed.acquired()).isTrue();
		assertThat(claimed.fencingToken()).isGreaterThan(readToken);
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void aWaitingReaderIsWokenByTheWritersRelease(Client client) throws Exception {
		RedisLockBackend readers = backend(client);
		RedisLockBackend writers = backend(client);
		BlockingQueue<String> heard = new LinkedBlockingQueue<>();
		// Subscribed as the engine's handoff subscribes: the plain release reaches `released`.
		this.subscriptions.add(readers.subscribe(heard::add, (reservedKey, owner) -> heard.add("reserved " + owner)));
		await().atMost(PROMPT).until(readers::isListening);
		assertThat(writers.tryAcquire(this.key, "w", TTL).acquired()).isTrue();
		assertThat(readers.tryAcquireShared(this.key, "r", TTL, RECORD).acquired()).isFalse();
		assertThat(raw().opsForZSet().score(this.lockKey + ":readwait", "r")).isNotNull();
		assertThat(writers.release(this.key, "w")).isTrue();
		assertThat(heard.poll(PROMPT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(this.key);
		assertThat(readers.tryAcquireShared(this.key, "r", TTL, RECORD).acquired()).isTrue();
		assertThat(raw().opsForZSet().score(this.lockKey + ":readwait", "r")).as("its record gone").isNull();
		// With nobody waiting, a release stays unannounced (RED-4).
		readers.release(this.key, "r");
		writers.tryAcquire(this.key, "w2", TTL);
		writers.release(this.key, "w2");
		assertThat(heard.poll(500, TimeUnit.MILLISECONDS)).isNull();
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void aWriterThatWithdrawsWakesAWaitingReader(Client client) throws Exception {
		RedisLockBackend readers = backend(client);
		RedisLockBackend writers = backend(client);
		BlockingQueue<String> heard = new LinkedBlockingQueue<>();
		this.subscriptions.add(readers.subscribe(heard::add));
		await().atMost(PROMPT).until(readers::isListening);
		assertThat(readers.tryAcquireShared(this.key, "r1", TTL, ONCE).acquired()).isTrue();
		assertThat(writers.tryAcquireWaiting(this.key, "w", TTL, RECORD).acquired()).isFalse();
		assertThat(readers.tryAcquireShared(this.key, "r2", TTL, RECORD).acquired()).isFalse();
		assertThat(writers.withdraw(this.key, "w")).isTrue();
		assertThat(heard.poll(PROMPT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(this.key);
		assertThat(readers.tryAcquireShared(this.key, "r2", TTL, RECORD).acquired()).isTrue();
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void renewSharedRenewsLiveEntriesOnlyAndReportsTheOthersAbsent(Client client) {
		RedisLockBackend backend = backend(client);
		String live = this.key + ":live";
		String released = this.key + ":released";
		String expired = this.key + ":expired";
		String writeHeld = this.key + ":write-held";
		String foreign = this.key + ":foreign";
		backend.tryAcquireShared(live, "r", Duration.ofSeconds(2), ONCE);
		backend.tryAcquireShared(released, "r", TTL, ONCE);
		backend.release(released, "r");
		backend.tryAcquireShared(expired, "r", Duration.ofMillis(200), ONCE);
		backend.tryAcquireShared(expired, "other", TTL, ONCE);
		backend.tryAcquire(writeHeld, "r", TTL);
		backend.tryAcquireShared(foreign, "other", TTL, ONCE);
		// Until the 200 ms entry is stale (Redis runs on this host's clock).
		await().atMost(PROMPT)
			.until(() -> raw().opsForZSet().count("{" + expired + "}:readers", System.currentTimeMillis(),
					Double.MAX_VALUE) == 1);
		Duration longer = Duration.ofSeconds(60);
		Set<String> renewed = backend.renewShared(List.of(new HeldLock(live, "r", longer),
				new HeldLock(released, "r", longer), new HeldLock(expired, "r", longer),
				new HeldLock(writeHeld, "r", longer), new HeldLock(foreign, "r", longer)));
		assertThat(renewed).containsExactly(live);
		assertThat(raw().getExpire("{" + live + "}", TimeUnit.SECONDS)).isBetween(55L, 60L);
		assertThat(raw().getExpire("{" + live + "}:readers", TimeUnit.SECONDS)).isBetween(55L, 60L);
		assertThat(raw().getExpire("{" + expired + "}", TimeUnit.SECONDS)).as("not renewed").isLessThanOrEqualTo(10L);
		assertThat(raw().getExpire("{" + writeHeld + "}", TimeUnit.SECONDS)).isLessThanOrEqualTo(10L);
		assertThat(backend.renewShared(List.of())).isEmpty();
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void afterAForcedReleaseOrExpiryAnOldReaderDoesNotCountInANewGroup(Client client) {
		RedisLockBackend backend = backend(client);
		assertThat(backend.tryAcquireShared(this.key, "old", TTL, ONCE).acquired()).isTrue();
		assertThat(backend.forceRelease(this.key, null)).isTrue();
		assertThat(backend.tryAcquireShared(this.key, "new", TTL, ONCE).acquired()).isTrue();
		assertThat(backend.renewShared(List.of(new HeldLock(this.key, "old", TTL)))).as("the old cannot renew")
			.isEmpty();
		assertThat(backend.release(this.key, "old")).as("nor release").isFalse();
		assertThat(backend.release(this.key, "new")).isTrue();
		assertThat(backend.tryAcquire(this.key, "w", TTL).acquired()).as("the old does not hold the new group")
			.isTrue();
		backend.release(this.key, "w");
		// The group expired: the old entry stays stale, in a new group too.
		assertThat(backend.tryAcquireShared(this.key, "short", Duration.ofMillis(200), ONCE).acquired()).isTrue();
		await().atMost(PROMPT).until(() -> !raw().hasKey(this.lockKey));
		assertThat(backend.tryAcquireShared(this.key, "next", TTL, ONCE).acquired()).isTrue();
		assertThat(backend.renewShared(List.of(new HeldLock(this.key, "short", TTL)))).isEmpty();
		assertThat(backend.release(this.key, "short")).isFalse();
		assertThat(raw().opsForZSet().zCard(this.lockKey + ":readers")).isOne();
	}

	@ParameterizedTest
	@EnumSource(Client.class)
	void aReadHeldLockIsListedWithItsReaderCountAndAForcedReleaseEndsTheGroup(Client client) {
		RedisLockBackend backend = backend(client);
		long token = backend.tryAcquireShared(this.key, "r1@host-a:8080", TTL, ONCE).fencingToken();
		backend.tryAcquireShared(this.key, "r2@host-b:8080", TTL, ONCE);
		BackendLock lock = backend.lock(this.key);
		assertThat(lock).isNotNull();
		assertThat(lock.instance()).isEqualTo("2 readers");
		assertThat(lock.fencingToken()).isEqualTo(token);
		assertThat(lock.remainingMillis()).isBetween(1L, TTL.toMillis());
		assertThat(backend.listLocks("rw-", 10_000).locks()).filteredOn((listed) -> listed.key().equals(this.key))
			.singleElement()
			.satisfies((listed) -> assertThat(listed.instance()).isEqualTo("2 readers"));
		assertThat(backend.forceRelease(this.key, token)).isTrue();
		assertThat(raw().hasKey(this.lockKey + ":readers")).isFalse();
		assertThat(backend.release(this.key, "r1@host-a:8080")).isFalse();
		assertThat(backend.tryAcquire(this.key, "w", TTL).acquired()).isTrue();
	}

	private RedisLockBackend backend(Client client) {
		RedisConnectionFactory factory = (client == Client.LETTUCE) ? RedisClients.connectionFactory(server)
				: RedisClients.jedisConnectionFactory(server);
		this.factories.add((DisposableBean) factory);
		RedisLockBackend backend = RedisLockBackend.of(factory, "rw-released-" + this.key);
		assertThat(backend instanceof NonBlockingRedisLockBackend).isEqualTo(client == Client.LETTUCE);
		this.backends.add(backend);
		return backend;
	}

	private StringRedisTemplate raw() {
		if (this.raw == null) {
			var factory = RedisClients.connectionFactory(server);
			this.factories.add(factory);
			this.raw = RedisClients.template(factory);
		}
		return this.raw;
	}

}
