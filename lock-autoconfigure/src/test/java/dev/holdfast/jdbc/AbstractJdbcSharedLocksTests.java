package dev.holdfast.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.ClusterLocks.BackendLock;
import dev.holdfast.spi.HeldLock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Read holds of {@link JdbcLockBackend} (RWL-30 to RWL-39) at the backend's SPI, on every database
 * of {@link AbstractJdbcBackendTests}; each backend is another client with a pool of its own.
 */
abstract class AbstractJdbcSharedLocksTests extends AbstractJdbcBackendTests {

	private static final Duration TTL = Duration.ofSeconds(30);

	private static AcquireResult read(JdbcLockBackend backend, String key, String owner) {
		return backend.tryAcquireShared(key, owner, TTL, Duration.ZERO);
	}

	@Test
	void readersOverlapAndAWriterTakesTheKeyOnlyAfterTheLastReaderReleased() {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		String key = key();
		String r1 = owner();
		String r2 = owner();
		AcquireResult first = read(a, key, r1);
		AcquireResult second = read(b, key, r2);
		assertThat(first.acquired()).isTrue();
		assertThat(second.acquired()).isTrue();
		assertThat(second.fencingToken()).isEqualTo(first.fencingToken());
		assertThat(read(b, key, r2).acquired()).as("a resend answers as the first run did").isTrue();
		String writer = owner();
		AcquireResult refused = b.tryAcquire(key, writer, TTL);
		assertThat(refused.acquired()).isFalse();
		assertThat(refused.holderRemainingMillis()).isGreaterThan(TTL.toMillis() - 5_000);
		assertThat(a.release(key, r1)).isTrue();
		assertThat(b.tryAcquire(key, writer, TTL).acquired()).isFalse();
		assertThat(b.release(key, r2)).isTrue();
		assertThat(b.release(key, r2)).isFalse();
		assertThat(b.tryAcquire(key, writer, TTL).acquired()).isTrue();
		assertThat(b.release(key, writer)).isTrue();
	}

	@Test
	void aJoinWithALongerTtlKeepsAWriterOutPastTheFirstExpiry() {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		String key = key();
		String reader = owner();
		AcquireResult first = a.tryAcquireShared(key, reader, Duration.ofSeconds(1), Duration.ZERO);
		AcquireResult join = a.tryAcquireShared(key, reader, TTL, Duration.ZERO);
		assertThat(join.acquired()).isTrue();
		assertThat(join.fencingToken()).isEqualTo(first.fencingToken());
		AcquireResult refused = b.tryAcquire(key, owner(), TTL);
		assertThat(refused.acquired()).isFalse();
		assertThat(refused.holderRemainingMillis()).as("the record follows the join").isGreaterThan(TTL.toMillis() - 5_000);
		long rowTtl = new JdbcTemplate(dataSource()).queryForObject("SELECT expires_at - acquired_at FROM holdfast_lock"
				+ " WHERE lock_key = ?", Long.class, JdbcKeys.readerKey(key, reader));
		assertThat(rowTtl).as("the owner's row follows the join").isGreaterThan((TTL.toMillis() - 5_000) * 1000);
		assertThat(a.release(key, reader)).isTrue();
		assertThat(b.tryAcquire(key, owner(), TTL).acquired()).isTrue();
	}

	@Test
	void aJoinWithAShorterTtlLowersNoExpiry() {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		String key = key();
		String reader = owner();
		assertThat(read(a, key, reader).acquired()).isTrue();
		JdbcTemplate operator = new JdbcTemplate(dataSource());
		String sql = "SELECT expires_at FROM holdfast_lock WHERE lock_key = ?";
		String readerKey = JdbcKeys.readerKey(key, reader);
		Long before = operator.queryForObject(sql, Long.class, readerKey);
		assertThat(a.tryAcquireShared(key, reader, Duration.ofSeconds(1), Duration.ZERO).acquired()).isTrue();
		assertThat(operator.queryForObject(sql, Long.class, readerKey)).isEqualTo(before);
		assertThat(operator.queryForObject(sql, Long.class, key)).isEqualTo(before);
		assertThat(b.tryAcquire(key, owner(), TTL).holderRemainingMillis()).isGreaterThan(TTL.toMillis() - 5_000);
	}

	@Test
	void aJoinByTheSameOwnerIsRefusedWhileAWritersStampLives() {
		JdbcLockBackend readers = newBackend();
		JdbcLockBackend writers = newBackend();
		String key = key();
		String reader = owner();
		assertThat(read(readers, key, reader).acquired()).isTrue();
		assertThat(writers.tryAcquireAsWaitingWriter(key, owner(), TTL, Duration.ofSeconds(20)).acquired()).isFalse();
		AcquireResult join = read(readers, key, reader);
		assertThat(join.acquired()).as("writer preference holds for the lease's own owner").isFalse();
		assertThat(join.holderRemainingMillis()).isBetween(10_000L, 20_000L);
	}

	@Test
	void aJoinAfterAForcedReleaseAnswersANewToken() {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		String key = key();
		String reader = owner();
		AcquireResult first = read(a, key, reader);
		assertThat(b.forceRelease(key, null)).isTrue();
		AcquireResult join = read(a, key, reader);
		assertThat(join.acquired()).isTrue();
		assertThat(join.fencingToken()).as("the ended group's lease is lost").isNotEqualTo(first.fencingToken());
		String writer = owner();
		assertThat(a.release(key, reader)).isTrue();
		AcquireResult write = b.tryAcquire(key, writer, TTL);
		assertThat(write.fencingToken()).isGreaterThan(join.fencingToken());
	}

	@Test
	void renewalLocksRecordsInTheOrderOfUnsignedUtf8Bytes() {
		// U+FFFF is one UTF-16 unit above a surrogate, but its UTF-8 bytes sort below U+1F600's, as COLLATE "C"
		assertThat(JdbcSharedLocks.KEY_ORDER.compare("k\uFFFF", "k\uD83D\uDE00")).isNegative();
		assertThat(JdbcSharedLocks.KEY_ORDER.compare("a", "b")).isNegative();
	}

	@Test
	void aReaderIsRefusedWhileTheKeyIsWriteHeld() {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		String key = key();
		String writer = owner();
		assertThat(a.tryAcquire(key, writer, TTL).acquired()).isTrue();
		AcquireResult refused = b.tryAcquireShared(key, owner(), TTL, Duration.ofSeconds(1));
		assertThat(refused.acquired()).isFalse();
		assertThat(refused.holderRemainingMillis()).isGreaterThan(TTL.toMillis() - 5_000);
		assertThat(a.release(key, writer)).isTrue();
		assertThat(read(b, key, owner()).acquired()).isTrue();
	}

	@Test
	void aWaitingWritersStampRefusesNewReadersAndJoinsUntilTheWriterTookTheKey() {
		JdbcLockBackend readers = newBackend();
		JdbcLockBackend writers = newBackend();
		String key = key();
		String r1 = owner();
		String writer = owner();
		assertThat(read(readers, key, r1).acquired()).isTrue();
		assertThat(writers.tryAcquireAsWaitingWriter(key, writer, TTL, Duration.ofSeconds(20)).acquired()).isFalse();
		AcquireResult join = read(readers, key, owner());
		assertThat(join.acquired()).as("a join of the live group").isFalse();
		assertThat(join.holderRemainingMillis()).isBetween(10_000L, 20_000L);
		assertThat(readers.release(key, r1)).isTrue();
		assertThat(read(readers, key, owner()).acquired()).as("a new group on the free key").isFalse();
		AcquireResult written = writers.tryAcquireAsWaitingWriter(key, writer, TTL, Duration.ofSeconds(20));
		assertThat(written.acquired()).isTrue();
		assertThat(writers.release(key, writer)).isTrue();
		// the stamp was written under the record's fence, which the writer's acquisition moved on
		assertThat(read(readers, key, owner()).acquired()).isTrue();
	}

	@Test
	void aWaitingWritersStampStopsRefusingReadersWhenItExpires() {
		JdbcLockBackend readers = newBackend();
		JdbcLockBackend writers = newBackend();
		String key = key();
		assertThat(read(readers, key, owner()).acquired()).isTrue();
		assertThat(writers.tryAcquireAsWaitingWriter(key, owner(), TTL, Duration.ofMillis(700)).acquired()).isFalse();
		String late = owner();
		assertThat(read(readers, key, late).acquired()).isFalse();
		await().atMost(Duration.ofSeconds(5)).until(() -> read(readers, key, late).acquired());
	}

	@Test
	void aPlainRefusalOfAWaitingWriterStampsNothingWhenTheKeyIsWriteHeld() {
		JdbcLockBackend a = newBackend();
		String key = key();
		String writer = owner();
		assertThat(a.tryAcquire(key, writer, TTL).acquired()).isTrue();
		assertThat(a.tryAcquireAsWaitingWriter(key, owner(), TTL, Duration.ofSeconds(20)).acquired()).isFalse();
		assertThat(a.release(key, writer)).isTrue();
		assertThat(read(a, key, owner()).acquired()).isTrue();
	}

	@Test
	void renewSharedRenewsOnlyHoldsOfLiveReaders() {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		Duration shortTtl = Duration.ofMillis(300);
		String live = key();
		String released = key();
		String expired = key();
		String foreign = key();
		String r1 = owner();
		String r2 = owner();
		String r3 = owner();
		assertThat(a.tryAcquireShared(live, r1, Duration.ofSeconds(5), Duration.ZERO).acquired()).isTrue();
		assertThat(read(b, released, owner()).acquired()).isTrue();
		assertThat(read(a, released, r2).acquired()).isTrue();
		assertThat(a.release(released, r2)).isTrue();
		assertThat(a.tryAcquireShared(expired, r3, shortTtl, Duration.ZERO).acquired()).isTrue();
		assertThat(read(b, foreign, owner()).acquired()).isTrue();
		String writer = owner();
		await().atMost(Duration.ofSeconds(5)).until(() -> b.tryAcquire(expired, writer, TTL).acquired());

		Set<String> renewed = a.renewShared(List.of(new HeldLock(live, r1, Duration.ofSeconds(60)),
				new HeldLock(released, r2, Duration.ofSeconds(60)), new HeldLock(expired, r3, Duration.ofSeconds(60)),
				new HeldLock(foreign, owner(), Duration.ofSeconds(60))));
		assertThat(renewed).containsExactly(live);
		AcquireResult refused = b.tryAcquire(live, owner(), TTL);
		assertThat(refused.acquired()).isFalse();
		assertThat(refused.holderRemainingMillis()).as("the record follows its reader").isGreaterThan(50_000);
		assertThat(a.renewShared(List.of(new HeldLock(expired, writer, TTL)))).as("a writer is no reader").isEmpty();
	}

	@Test
	void aCrashedReaderFreesTheKeyWithinItsTtl() {
		JdbcLockBackend crashed = newBackend();
		JdbcLockBackend writers = newBackend();
		String key = key();
		String survivor = owner();
		assertThat(read(writers, key, survivor).acquired()).isTrue();
		assertThat(crashed.tryAcquireShared(key, owner(), Duration.ofMillis(800), Duration.ZERO).acquired()).isTrue();
		assertThat(writers.release(key, survivor)).isTrue();
		// the crashed reader's hold keeps the key read-held, for no longer than its own ttl
		String writer = owner();
		assertThat(writers.tryAcquire(key, writer, TTL).acquired()).isFalse();
		await().atMost(Duration.ofSeconds(3)).until(() -> writers.tryAcquire(key, writer, TTL).acquired());
	}

	@Test
	void aReaderOfAGroupThatAForcedReleaseEndedNeverCountsInTheNextGroup() {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		String key = key();
		String old = owner();
		assertThat(read(a, key, old).acquired()).isTrue();
		assertThat(b.forceRelease(key, null)).isTrue();
		assertThat(a.renewShared(List.of(new HeldLock(key, old, TTL)))).isEmpty();
		String next = owner();
		assertThat(read(b, key, next).acquired()).isTrue();
		assertThat(b.release(key, next)).isTrue();
		String writer = owner();
		assertThat(b.tryAcquire(key, writer, TTL).acquired()).as("the old reader holds nothing").isTrue();
		assertThat(a.release(key, old)).isFalse();
		assertThat(b.release(key, writer)).isTrue();
	}

	@Test
	void aReaderRowOfAnEarlierGenerationNeverCountsInTheGroupOfANewRecord() throws Exception {
		JdbcLockBackend a = newBackend();
		String key = key();
		String old = owner();
		assertThat(read(a, key, old).acquired()).isTrue();
		JdbcTemplate operator = new JdbcTemplate(dataSource());
		String readerKey = JdbcKeys.readerKey(key, old);
		// as a sweep of the record, and of every other reader row of the key but this one, would
		operator.update("DELETE FROM holdfast_lock WHERE lock_key = ?", key);
		String next = owner();
		assertThat(read(a, key, next).acquired()).isTrue();
		// a reader row written back by a late statement of the old group: its generation is not the record's
		operator.update("DELETE FROM holdfast_lock WHERE lock_key = ?", readerKey);
		operator.update("INSERT INTO holdfast_lock (lock_key, owner_token, fence, expires_at, acquired_at, holder)"
				+ " SELECT ?, ?, fence - 1, expires_at, acquired_at, holder FROM holdfast_lock WHERE lock_key = ?",
				readerKey, old, JdbcKeys.readerKey(key, next));
		assertThat(a.renewShared(List.of(new HeldLock(key, old, TTL)))).isEmpty();
		assertThat(a.release(key, next)).isTrue();
		assertThat(a.tryAcquire(key, owner(), TTL).acquired()).as("the old reader holds nothing").isTrue();
	}

	@Test
	void aReadersTokenIsAtLeastTheLastWritesAndBelowEveryLaterWrites() {
		JdbcLockBackend a = newBackend();
		String key = key();
		String w1 = owner();
		AcquireResult write = a.tryAcquire(key, w1, TTL);
		assertThat(a.release(key, w1)).isTrue();
		String r1 = owner();
		String r2 = owner();
		AcquireResult reading = read(a, key, r1);
		assertThat(reading.fencingToken()).isGreaterThanOrEqualTo(write.fencingToken());
		assertThat(read(a, key, r2).fencingToken()).isEqualTo(reading.fencingToken());
		assertThat(a.release(key, r1)).isTrue();
		assertThat(a.release(key, r2)).isTrue();
		String w2 = owner();
		AcquireResult later = a.tryAcquire(key, w2, TTL);
		assertThat(later.fencingToken()).isGreaterThan(reading.fencingToken());
		// a read of a key without a row gets a token of the database clock, below the next write's
		String fresh = key();
		AcquireResult first = read(a, fresh, owner());
		assertThat(first.fencingToken()).isGreaterThanOrEqualTo(later.fencingToken());
	}

	@Test
	void concurrentFirstReadersOfAKeyAllHoldWithoutDeadlocks() throws Exception {
		List<JdbcLockBackend> backends = List.of(newBackend(), newBackend(), newBackend(), newBackend());
		int threads = 8;
		ExecutorService pool = Executors.newFixedThreadPool(threads);
		try {
			for (int round = 0; round < 10; round++) {
				String key = key();
				CyclicBarrier start = new CyclicBarrier(threads);
				List<Future<AcquireResult>> results = new ArrayList<>();
				for (int i = 0; i < threads; i++) {
					JdbcLockBackend backend = backends.get(i % backends.size());
					results.add(pool.submit(() -> {
						start.await(10, TimeUnit.SECONDS);
						return read(backend, key, owner());
					}));
				}
				for (Future<AcquireResult> result : results) {
					assertThat(result.get(30, TimeUnit.SECONDS).acquired()).isTrue();
				}
			}
		}
		finally {
			pool.shutdownNow();
		}
	}

	@Test
	void theSweepDeletesExpiredReaderRowsAndKeepsALiveGroup() throws Exception {
		String table = "holdfast_sweep_read";
		JdbcTemplate operator = createTable(table);
		JdbcLockBackend a = newBackend(dataSource(), table);
		String live = key();
		String r1 = owner();
		assertThat(a.tryAcquireShared(live, r1, TTL, Duration.ZERO).acquired()).isTrue();
		// read-held since two hours, renewed since: the generation is two hours old
		long twoHours = Duration.ofHours(2).toMillis() * 1000;
		operator.update("UPDATE " + table + " SET fence = fence - ?, acquired_at = acquired_at - ?", twoHours, twoHours);
		String gone = key();
		String r2 = owner();
		assertThat(a.tryAcquireShared(gone, r2, TTL, Duration.ZERO).acquired()).isTrue();
		String goneReader = JdbcKeys.readerKey(gone, r2);
		operator.update("UPDATE " + table + " SET fence = fence - ?, expires_at = expires_at - ? - ? WHERE lock_key = ?",
				twoHours, twoHours, TTL.toMillis() * 1000, goneReader);

		assertThat(a.sweeper().sweep()).isOne();
		assertThat(operator.queryForList("SELECT lock_key FROM " + table, String.class))
			.containsExactlyInAnyOrder(live, JdbcKeys.readerKey(live, r1), gone);
		assertThat(a.tryAcquire(live, owner(), TTL).acquired()).isFalse();
		assertThat(a.release(live, r1)).isTrue();
		assertThat(a.tryAcquire(live, owner(), TTL).acquired()).isTrue();
	}

	@Test
	void theListingShowsAReadHeldKeyOnceAndNoReaderRows() {
		JdbcLockBackend a = newBackend();
		String key = key();
		assertThat(read(a, key, owner()).acquired()).isTrue();
		assertThat(read(a, key, owner()).acquired()).isTrue();
		List<BackendLock> listed = a.listLocks("", 100_000).locks();
		assertThat(listed).extracting(BackendLock::key).contains(key).noneMatch((k) -> k.startsWith("{"));
		assertThat(a.listLocks(key, 10).locks()).singleElement().satisfies((lock) -> {
			assertThat(lock.remainingMillis()).isGreaterThan(20_000);
			assertThat(lock.instance()).as("held by its live readers (RWL-38)").isEqualTo("2 readers");
		});
	}

	/**
	 * RWL-39: a client stopped between two statements of a read-hold transaction (simulated: its
	 * connection blocks before preparing the second statement) holds the key no longer than the query
	 * timeout of 1 s; its hold then fails and never existed, and its pool's next call works. Only a
	 * read acquisition is stopped: read release, renewal and the writer's stamp run in the same
	 * {@code inTransaction}.
	 */
	protected void assertAClientStoppedInsideAReadHoldTransactionHoldsTheKeyNoLongerThanTheQueryTimeout()
			throws Exception {
		assertAClientStoppedInsideAReadHoldTransactionHoldsTheKeyNoLongerThanTheQueryTimeout(null);
	}

	/** The same with the stopped client's pool running {@code connectionInitSql} on each new connection. */
	protected void assertAClientStoppedInsideAReadHoldTransactionHoldsTheKeyNoLongerThanTheQueryTimeout(
			@Nullable String connectionInitSql) throws Exception {
		AtomicBoolean armed = new AtomicBoolean();
		CountDownLatch stopped = new CountDownLatch(1);
		CountDownLatch resume = new CountDownLatch(1);
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try (HikariDataSource pool = newDataSource()) {
			pool.setConnectionInitSql(connectionInitSql);
			JdbcLockBackend stalled = new JdbcLockBackend(stoppingBeforeSecondStatement(pool, armed, stopped, resume),
					JdbcLockBackend.DEFAULT_TABLE_NAME, Duration.ofSeconds(1));
			JdbcLockBackend other = newBackend();
			String key = key();
			String reader = owner();
			assertThat(read(stalled, key, reader).acquired()).isTrue(); // the dialect is detected, the record made
			assertThat(stalled.release(key, reader)).isTrue();
			armed.set(true);
			Future<AcquireResult> hold = executor.submit(() -> read(stalled, key, reader));
			assertThat(stopped.await(10, TimeUnit.SECONDS)).isTrue();
			long start = System.nanoTime();
			String writer = owner();
			assertThat(other.tryAcquire(key, writer, TTL).acquired()).as("the stopped reader's hold never existed").isTrue();
			assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(3_500);
			resume.countDown();
			assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> hold.get(10, TimeUnit.SECONDS))
				.withCauseInstanceOf(LockBackendException.class);
			assertThat(new JdbcTemplate(dataSource()).queryForObject("SELECT COUNT(*) FROM holdfast_lock WHERE lock_key = ?",
					Long.class, JdbcKeys.readerKey(key, reader))).isZero();
			assertThat(other.release(key, writer)).isTrue();
			assertThat(read(stalled, key, reader).acquired()).as("the pool dropped the dead connection").isTrue();
			assertThat(stalled.release(key, reader)).isTrue();
		}
		finally {
			resume.countDown();
			executor.shutdownNow();
		}
	}

	/** Connections that, once armed, block before preparing the second statement of one borrow. */
	private static DataSource stoppingBeforeSecondStatement(DataSource dataSource, AtomicBoolean armed,
			CountDownLatch stopped, CountDownLatch resume) {
		ClassLoader loader = AbstractJdbcSharedLocksTests.class.getClassLoader();
		return (DataSource) Proxy.newProxyInstance(loader, new Class<?>[] { DataSource.class }, (proxy, method, args) -> {
			Object result = invoke(dataSource, method, args);
			if (!method.getName().equals("getConnection")) {
				return result;
			}
			int[] prepared = new int[1];
			return Proxy.newProxyInstance(loader, new Class<?>[] { Connection.class }, (p, m, a) -> {
				if (m.getName().equals("prepareStatement") && ++prepared[0] == 2 && armed.compareAndSet(true, false)) {
					stopped.countDown();
					resume.await();
				}
				return invoke(result, m, a);
			});
		});
	}

	static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
		try {
			return method.invoke(target, args);
		}
		catch (InvocationTargetException ex) {
			throw ex.getCause();
		}
	}

}
