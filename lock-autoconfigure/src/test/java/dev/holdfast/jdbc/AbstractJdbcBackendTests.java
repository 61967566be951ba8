package dev.holdfast.jdbc;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TimeZone;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.core.io.ByteArrayResource;
import org.springframework.core.io.ClassPathResource;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;
import org.springframework.transaction.support.TransactionTemplate;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;

import static dev.holdfast.spi.TickClaims.TickClaim.Outcome.CLAIMED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * Backend-level tests of {@link JdbcLockBackend}, tick claims included, that every database runs
 * against a real server. Each backend is a separate client with its own connection pool, as
 * another process. The shared contracts run in holdfast-test's {@code *JdbcContractTests}.
 */
abstract class AbstractJdbcBackendTests {

	/** A tolerance under which any tick is due: these tests are about the record. */
	private static final Duration ANY_TIME = Duration.ofDays(36500);

	private static final long TWO_HOURS_MICROS = Duration.ofHours(2).toMillis() * 1000;

	private final List<HikariDataSource> dataSources = new ArrayList<>();

	/** A new, independent connection pool on the shared server, whose schema exists. */
	protected abstract HikariDataSource newDataSource();

	/** SQL that sets a session time zone far from UTC. */
	protected abstract String farSessionTimeZoneSql();

	protected abstract String platform();

	/**
	 * Makes every insert into {@code table} by an owner token starting with {@code stall:} first
	 * update the single row of table {@code holdfast_gate}, so that the insert waits, with its
	 * database clock already read, while a transaction holds that row.
	 */
	protected abstract void installStall(JdbcTemplate operator, String table);

	/** How many sessions of the database wait for a lock that another one holds. */
	protected abstract long lockWaits(JdbcTemplate operator);

	/** Whether the sweep passes by a row another statement has locked instead of waiting for it. */
	protected boolean sweepSkipsLockedRows() {
		return false;
	}

	protected static void createSchema(DataSource dataSource, String platform) {
		new ResourceDatabasePopulator(new ClassPathResource("dev/holdfast/jdbc/schema-" + platform + ".sql"))
			.execute(dataSource);
	}

	protected DataSource dataSource() {
		HikariDataSource dataSource = newDataSource();
		this.dataSources.add(dataSource);
		return dataSource;
	}

	protected JdbcLockBackend newBackend() {
		return newBackend(dataSource());
	}

	protected JdbcLockBackend newBackend(DataSource dataSource) {
		return newBackend(dataSource, JdbcLockBackend.DEFAULT_TABLE_NAME);
	}

	protected JdbcLockBackend newBackend(DataSource dataSource, String table) {
		return new JdbcLockBackend(dataSource, table, Duration.ofSeconds(5));
	}

	/** Creates {@code table} afresh with this database's schema script; returns an operator on it. */
	protected JdbcTemplate createTable(String table) throws Exception {
		DataSource dataSource = dataSource();
		JdbcTemplate operator = new JdbcTemplate(dataSource);
		operator.execute("DROP TABLE IF EXISTS " + table);
		String script = new ClassPathResource("dev/holdfast/jdbc/schema-" + platform() + ".sql")
			.getContentAsString(StandardCharsets.UTF_8)
			.replace(JdbcLockBackend.DEFAULT_TABLE_NAME, table);
		new ResourceDatabasePopulator(new ByteArrayResource(script.getBytes(StandardCharsets.UTF_8)))
			.execute(dataSource);
		return operator;
	}

	@AfterEach
	void closeDataSources() {
		this.dataSources.forEach(HikariDataSource::close);
	}

	protected static String key() {
		return "test:" + UUID.randomUUID();
	}

	protected static String owner() {
		return UUID.randomUUID().toString();
	}

	@Test
	void secondClientSeesLockHeldWithHolderRemainingTime() {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		String key = key();
		AcquireResult first = a.tryAcquire(key, owner(), Duration.ofSeconds(10));
		assertThat(first.acquired()).isTrue();
		assertThat(first.fencingToken()).isPositive();
		AcquireResult second = b.tryAcquire(key, owner(), Duration.ofSeconds(10));
		assertThat(second.acquired()).isFalse();
		assertThat(second.holderRemainingMillis()).isBetween(8_000L, 10_000L);
	}

	@Test
	void releaseLetsAnotherClientAcquire() {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		String key = key();
		String owner = owner();
		assertThat(a.tryAcquire(key, owner, Duration.ofSeconds(10)).acquired()).isTrue();
		assertThat(a.release(key, owner)).isTrue();
		assertThat(a.release(key, owner)).isFalse();
		assertThat(b.tryAcquire(key, owner(), Duration.ofSeconds(10)).acquired()).isTrue();
	}

	@Test
	void releaseByAnotherOwnerIsIgnored() {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		String key = key();
		assertThat(a.tryAcquire(key, owner(), Duration.ofSeconds(10)).acquired()).isTrue();
		assertThat(b.release(key, owner())).isFalse();
		assertThat(b.tryAcquire(key, owner(), Duration.ofSeconds(10)).acquired()).isFalse();
	}

	@Test
	void expiredLeaseCanBeTakenOverWithLargerToken() throws Exception {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		String key = key();
		String ownerA = owner();
		AcquireResult first = a.tryAcquire(key, ownerA, Duration.ofMillis(800));
		assertThat(first.acquired()).isTrue();
		AcquireResult held = b.tryAcquire(key, owner(), Duration.ofSeconds(10));
		assertThat(held.acquired()).isFalse();
		// the holder's reported remaining time bounds when the lock becomes free
		AcquireResult second = await().atMost(Duration.ofMillis(held.holderRemainingMillis() + 1000))
			.until(() -> b.tryAcquire(key, owner(), Duration.ofSeconds(10)), AcquireResult::acquired);
		assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
		// the first owner's late release must not free the new holder's lock
		assertThat(a.release(key, ownerA)).isFalse();
		assertThat(a.tryAcquire(key, owner(), Duration.ofSeconds(10)).acquired()).isFalse();
	}

	@Test
	void expiryIsDecidedByDatabaseClockWhateverTheClientTimeZones() throws Exception {
		TimeZone original = TimeZone.getDefault();
		try {
			JdbcLockBackend a = newBackend();
			String key = key();
			assertThat(a.tryAcquire(key, owner(), Duration.ofSeconds(2)).acquired()).isTrue();
			// another process: JVM default zone 14 hours east, database session zone as well
			TimeZone.setDefault(TimeZone.getTimeZone("Pacific/Kiritimati"));
			HikariDataSource far = newDataSource();
			this.dataSources.add(far);
			far.setConnectionInitSql(farSessionTimeZoneSql());
			JdbcLockBackend b = newBackend(far);
			AcquireResult held = b.tryAcquire(key, owner(), Duration.ofSeconds(10));
			assertThat(held.acquired()).isFalse();
			assertThat(held.holderRemainingMillis()).isBetween(1L, 2000L);
			await().atMost(Duration.ofMillis(held.holderRemainingMillis() + 1000))
				.until(() -> b.tryAcquire(key, owner(), Duration.ofSeconds(10)), AcquireResult::acquired);
		}
		finally {
			TimeZone.setDefault(original);
		}
	}

	@Test
	void renewalExtendsOnlyLocksItsOwnersStillHold() throws Exception {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		String k1 = key();
		String k2 = key();
		String k3 = key();
		String k4 = key();
		String o1 = owner();
		String o2 = owner();
		String o4 = owner();
		assertThat(a.tryAcquire(k1, o1, Duration.ofSeconds(3)).acquired()).isTrue();
		assertThat(a.tryAcquire(k2, o2, Duration.ofSeconds(3)).acquired()).isTrue();
		assertThat(b.tryAcquire(k3, owner(), Duration.ofSeconds(10)).acquired()).isTrue();
		assertThat(a.tryAcquire(k4, o4, Duration.ofSeconds(10)).acquired()).isTrue();
		// k4's lease ends, on the database clock, before the renewal comes.
		new JdbcTemplate(dataSource()).update("UPDATE holdfast_lock SET expires_at = 0 WHERE lock_key = ?", k4);
		Set<String> renewed = a.renew(List.of(new HeldLock(k1, o1, Duration.ofSeconds(10)),
				new HeldLock(k2, o2, Duration.ofSeconds(20)), new HeldLock(k3, owner(), Duration.ofSeconds(10)),
				new HeldLock(k4, o4, Duration.ofSeconds(10))));
		assertThat(renewed).containsExactlyInAnyOrder(k1, k2);
		// the database now counts each renewed lock's own TTL from the renewal
		AcquireResult held1 = b.tryAcquire(k1, owner(), Duration.ofSeconds(1));
		assertThat(held1.acquired()).isFalse();
		assertThat(held1.holderRemainingMillis()).isBetween(8_000L, 10_000L);
		AcquireResult held2 = b.tryAcquire(k2, owner(), Duration.ofSeconds(1));
		assertThat(held2.holderRemainingMillis()).isBetween(18_000L, 20_000L);
		// the expired lease was not revived, so another client takes it
		assertThat(b.tryAcquire(k4, owner(), Duration.ofSeconds(1)).acquired()).isTrue();
	}

	@Test
	void renewalOfManyLocksReportsEachOfThem() {
		JdbcLockBackend a = newBackend();
		List<HeldLock> held = new ArrayList<>();
		for (int i = 0; i < JdbcLockDialect.RENEW_CHUNK + 20; i++) {
			HeldLock lock = new HeldLock(key(), owner(), Duration.ofSeconds(10));
			assertThat(a.tryAcquire(lock.key(), lock.owner(), lock.ttl()).acquired()).isTrue();
			held.add(lock);
		}
		assertThat(a.renew(held)).hasSize(held.size());
		assertThat(a.renew(List.of())).isEmpty();
	}

	@Test
	void fencingTokensIncreaseAcrossReleaseExpiryAndDeletedRows() throws Exception {
		JdbcLockBackend a = newBackend();
		JdbcLockBackend b = newBackend();
		JdbcTemplate operator = new JdbcTemplate(dataSource());
		String key = key();
		long last = 0;
		for (int i = 0; i < 20; i++) {
			JdbcLockBackend client = (i % 2 == 0) ? a : b;
			String owner = owner();
			AcquireResult result = client.tryAcquire(key, owner, Duration.ofSeconds(10));
			assertThat(result.acquired()).isTrue();
			assertThat(result.fencingToken()).isGreaterThan(last);
			last = result.fencingToken();
			if (i % 2 == 0) {
				assertThat(client.release(key, owner)).isTrue();
			}
			else {
				// an operator deletes the row
				assertThat(operator.update("DELETE FROM holdfast_lock WHERE lock_key = ?", key)).isOne();
			}
		}
		// a row taken over after expiry continues from its previous token, even one far ahead
		// of the clock
		assertThat(a.tryAcquire(key, owner(), Duration.ofMillis(1)).acquired()).isTrue();
		long ahead = last + 3_600_000_000L;
		operator.update("UPDATE holdfast_lock SET expires_at = 0, fence = ? WHERE lock_key = ?", ahead, key);
		AcquireResult takeover = b.tryAcquire(key, owner(), Duration.ofSeconds(10));
		assertThat(takeover.acquired()).isTrue();
		assertThat(takeover.fencingToken()).isEqualTo(ahead + 1);
	}

	@Test
	void releaseKeepsTheTokenSoTheNextHolderContinuesFromIt() throws Exception {
		String table = "holdfast_release_lock";
		JdbcTemplate operator = createTable(table);
		JdbcLockBackend a = newBackend(dataSource(), table);
		JdbcLockBackend b = newBackend(dataSource(), table);
		String key = key();
		String owner = owner();
		assertThat(a.tryAcquire(key, owner, Duration.ofSeconds(10)).acquired()).isTrue();
		// a token far ahead of the database clock: only the released row can carry it on
		long ahead = operator.queryForObject("SELECT fence FROM " + table + " WHERE lock_key = ?", Long.class, key)
				+ 3_600_000_000L;
		operator.update("UPDATE " + table + " SET fence = ? WHERE lock_key = ?", ahead, key);
		assertThat(a.release(key, owner)).isTrue();
		// the released lock reads as free at once, and only its owner could release it
		assertThat(a.release(key, owner)).isFalse();
		AcquireResult next = b.tryAcquire(key, owner(), Duration.ofSeconds(10));
		assertThat(next.acquired()).isTrue();
		assertThat(next.fencingToken()).isEqualTo(ahead + 1);
		assertThat(b.renew(List.of(new HeldLock(key, owner, Duration.ofSeconds(10))))).isEmpty();
	}

	@Test
	void sweepDeletesOnlyRowsExpiredLongerThanTheSweepDelay() throws Exception {
		String table = "holdfast_sweep_lock";
		JdbcTemplate operator = createTable(table);
		JdbcLockBackend a = newBackend(dataSource(), table);
		String held = acquire(a, Duration.ofSeconds(30));
		String heldLong = acquire(a, Duration.ofSeconds(30));
		String released = key();
		String owner = owner();
		assertThat(a.tryAcquire(released, owner, Duration.ofSeconds(30)).acquired()).isTrue();
		assertThat(a.release(released, owner)).isTrue();
		String expired = acquire(a, Duration.ofMillis(1));
		String old = acquire(a, Duration.ofMillis(1));
		String oldAhead = acquire(a, Duration.ofMillis(1));
		// heldLong was taken two hours ago and renewed since; old and oldAhead expired two hours
		// ago, and oldAhead's token is still ahead of the clock
		twoHoursBack(operator, table, heldLong, "fence", "acquired_at");
		twoHoursBack(operator, table, old, "fence", "acquired_at", "expires_at");
		twoHoursBack(operator, table, oldAhead, "fence", "acquired_at", "expires_at");
		operator.update("UPDATE " + table + " SET fence = fence + ? WHERE lock_key = ?", 2 * TWO_HOURS_MICROS,
				oldAhead);
		long oldFence = operator.queryForObject("SELECT fence FROM " + table + " WHERE lock_key = ?", Long.class, old);

		assertThat(a.sweeper().sweep()).isOne();
		assertThat(operator.queryForList("SELECT lock_key FROM " + table, String.class))
			.containsExactlyInAnyOrder(held, heldLong, released, expired, oldAhead);
		assertThat(a.sweeper().sweep()).isZero();
		// a swept key starts again at the database clock, above the swept row's token
		AcquireResult again = a.tryAcquire(old, owner(), Duration.ofSeconds(10));
		assertThat(again.acquired()).isTrue();
		assertThat(again.fencingToken()).isGreaterThan(oldFence);
		assertThat(newBackend(dataSource(), table).tryAcquire(held, owner(), Duration.ofSeconds(10)).acquired())
			.isFalse();
	}

	@Test
	void sweepSparesARowThatAnAcquisitionTakesOverMeanwhile() throws Exception {
		String table = "holdfast_sweep_race_lock";
		JdbcTemplate operator = createTable(table);
		JdbcLockBackend a = newBackend(dataSource(), table);
		String key = acquire(a, Duration.ofMillis(1));
		twoHoursBack(operator, table, key, "fence", "expires_at");
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try (Connection takeover = dataSource().getConnection(); Statement statement = takeover.createStatement()) {
			// a takeover has updated the long-expired row but not committed yet
			takeover.setAutoCommit(false);
			statement.executeUpdate("UPDATE " + table + " SET owner_token = 'new', fence = fence + 1,"
					+ " expires_at = expires_at + " + 2 * TWO_HOURS_MICROS + " WHERE lock_key = '" + key + "'");
			Future<Integer> sweep = executor.submit(a.sweeper()::sweep);
			// it waits for the row's lock, or (PostgreSQL: SKIP LOCKED, MKY-6) passes the row by
			await().atMost(Duration.ofSeconds(20))
				.until(() -> sweepSkipsLockedRows() ? sweep.isDone() : lockWaits(operator) > 0);
			takeover.commit();
			assertThat(sweep.get(20, TimeUnit.SECONDS)).isZero();
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(operator.queryForObject("SELECT owner_token FROM " + table + " WHERE lock_key = ?", String.class,
				key)).isEqualTo("new");
	}

	@Test
	void everyNthReleaseSweeps() throws Exception {
		String table = "holdfast_sweep_every_lock";
		JdbcTemplate operator = createTable(table);
		JdbcLockBackend a = newBackend(dataSource(), table);
		a.sweeper().sweepEvery(3);
		String old = acquire(a, Duration.ofMillis(1));
		twoHoursBack(operator, table, old, "fence", "expires_at");
		String sql = "SELECT COUNT(*) FROM " + table + " WHERE lock_key = ?";
		for (int release = 1; release <= 3; release++) {
			assertThat(operator.queryForObject(sql, Long.class, old)).isOne();
			String key = key();
			String owner = owner();
			assertThat(a.tryAcquire(key, owner, Duration.ofSeconds(10)).acquired()).isTrue();
			assertThat(a.release(key, owner)).isTrue();
		}
		// The third release started the sweep on the backend's own thread.
		await().atMost(Duration.ofSeconds(10))
			.untilAsserted(() -> assertThat(operator.queryForObject(sql, Long.class, old)).isZero());
	}

	@Test
	void tickRecordIsOneRowThatNoLockOperationTouches() throws Exception {
		String table = "holdfast_tick_lock";
		JdbcTemplate operator = createTable(table);
		JdbcLockBackend a = newBackend(dataSource(), table);
		JdbcLockBackend b = newBackend(dataSource(), table);
		String job = key();
		String record = job + "{tick}";
		Instant tick = Instant.parse("2030-01-01T00:00:00Z");
		assertThat(a.claimTick(job, tick, ANY_TIME, Duration.ofSeconds(30)).outcome() == CLAIMED).isTrue();
		assertThat(b.claimTick(job, tick.plusSeconds(1), ANY_TIME, Duration.ofSeconds(30)).outcome() == CLAIMED).isTrue();
		Map<String, Object> row = operator.queryForMap("SELECT owner_token, fence, expires_at - acquired_at AS ttl"
				+ " FROM " + table + " WHERE lock_key = ?", record);
		assertThat(row).containsEntry("owner_token", "");
		assertThat(((Number) row.get("fence")).longValue()).isEqualTo(tick.plusSeconds(1).toEpochMilli() * 1000);
		assertThat(((Number) row.get("ttl")).longValue()).isEqualTo(30_000_000L);
		assertThat(b.lastClaimedTick(job)).as("the tick in the record").isEqualTo(tick.plusSeconds(1));
		// the job's lock is a row of its own, and the record's key can be no lock's key
		String owner = owner();
		assertThat(a.tryAcquire(job, owner, Duration.ofSeconds(10)).acquired()).isTrue();
		assertThat(a.release(job, owner)).isTrue();
		assertThatIllegalArgumentException().isThrownBy(() -> b.tryAcquire(record, owner(), Duration.ofSeconds(10)))
			.withMessageContaining(record)
			.withMessageContaining("'{'");
		assertThat(b.release(record, owner())).isFalse();
		assertThat(b.renew(List.of(new HeldLock(record, owner(), Duration.ofSeconds(10))))).isEmpty();
		assertThat(b.checkHealth().up()).isTrue();
		// the sweep leaves a live record and deletes one that expired long ago, as any row
		String oldJob = key();
		assertThat(a.claimTick(oldJob, tick, ANY_TIME, Duration.ofMillis(1)).outcome() == CLAIMED).isTrue();
		twoHoursBack(operator, table, oldJob + "{tick}", "expires_at", "acquired_at");
		operator.update("UPDATE " + table + " SET fence = 0 WHERE lock_key = ?", oldJob + "{tick}");
		assertThat(a.sweeper().sweep()).isOne();
		assertThat(operator.queryForList("SELECT lock_key FROM " + table, String.class))
			.containsExactlyInAnyOrder(job, record);
		assertThat(a.claimTick(job, tick.plusSeconds(1), ANY_TIME, Duration.ofSeconds(30)).outcome() == CLAIMED).isFalse();
		assertThat(a.claimTick(oldJob, tick, ANY_TIME, Duration.ofSeconds(30)).outcome() == CLAIMED).as("a swept record starts afresh").isTrue();
	}

	@Test
	void aKeyTooLongForItsTickRecordGetsADigestOfItsOwn() throws Exception {
		String table = "holdfast_long_tick_lock";
		JdbcTemplate operator = createTable(table);
		JdbcLockBackend a = newBackend(dataSource(), table);
		String common = "holdfast:" + "j".repeat(240);
		Instant tick = Instant.parse("2030-01-01T00:00:00Z");
		assertThat(a.claimTick(common + "-one", tick, ANY_TIME, Duration.ofSeconds(30)).outcome() == CLAIMED).isTrue();
		assertThat(a.claimTick(common + "-two", tick, ANY_TIME, Duration.ofSeconds(30)).outcome() == CLAIMED).isTrue();
		assertThat(a.claimTick(common + "-one", tick, ANY_TIME, Duration.ofSeconds(30)).outcome() == CLAIMED).isFalse();
		assertThat(operator.queryForList("SELECT lock_key FROM " + table, String.class)).hasSize(2)
			.allSatisfy((key) -> assertThat(key).startsWith("{tick}").hasSizeLessThanOrEqualTo(255));
	}

	/** Moves {@code columns} of the row of {@code key} two hours back on the database clock. */
	private static void twoHoursBack(JdbcTemplate operator, String table, String key, String... columns) {
		List<String> assignments = new ArrayList<>();
		for (String column : columns) {
			assignments.add(column + " = " + column + " - " + TWO_HOURS_MICROS);
		}
		operator.update("UPDATE " + table + " SET " + String.join(", ", assignments) + " WHERE lock_key = ?", key);
	}

	private static String acquire(JdbcLockBackend backend, Duration ttl) {
		String key = key();
		assertThat(backend.tryAcquire(key, owner(), ttl).acquired()).isTrue();
		return key;
	}

	@Test
	void acquisitionStalledAfterReadingTheClockGetsNoSmallerTokenThanAHolderBeforeIt() throws Exception {
		String table = "holdfast_stalled_lock";
		JdbcTemplate operator = createTable(table);
		operator.execute("CREATE TABLE IF NOT EXISTS holdfast_gate (n INT NOT NULL)");
		operator.update("DELETE FROM holdfast_gate");
		operator.update("INSERT INTO holdfast_gate (n) VALUES (0)");
		installStall(operator, table);
		JdbcLockBackend a = newBackend(dataSource(), table);
		JdbcLockBackend b = newBackend(dataSource(), table);
		String key = key();
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try (Connection gate = dataSource().getConnection(); Statement statement = gate.createStatement()) {
			gate.setAutoCommit(false);
			statement.executeUpdate("UPDATE holdfast_gate SET n = n + 1");
			// a's statement reads the database clock, then waits for the gate before inserting
			Future<AcquireResult> stalled = executor
				.submit(() -> a.tryAcquire(key, "stall:" + owner(), Duration.ofSeconds(10)));
			await().atMost(Duration.ofSeconds(20)).until(() -> lockWaits(operator) > 0);
			// meanwhile b acquires and releases the lock
			String ownerB = owner();
			AcquireResult meanwhile = b.tryAcquire(key, ownerB, Duration.ofSeconds(10));
			assertThat(meanwhile.acquired()).isTrue();
			assertThat(b.release(key, ownerB)).isTrue();
			gate.rollback();
			AcquireResult late = stalled.get(20, TimeUnit.SECONDS);
			// a later holder never has a smaller token: the stalled attempt loses, or comes after b
			if (late.acquired()) {
				assertThat(late.fencingToken()).isGreaterThan(meanwhile.fencingToken());
			}
			else {
				AcquireResult retry = a.tryAcquire(key, owner(), Duration.ofSeconds(10));
				assertThat(retry.acquired()).isTrue();
				assertThat(retry.fencingToken()).isGreaterThan(meanwhile.fencingToken());
			}
		}
		finally {
			executor.shutdownNow();
		}
	}

	@Test
	void racersOnAFreeKeyYieldExactlyOneHolder() throws Exception {
		List<JdbcLockBackend> clients = List.of(newBackend(), newBackend(), newBackend());
		ExecutorService executor = Executors.newFixedThreadPool(6);
		try {
			for (int round = 0; round < 10; round++) {
				String key = key();
				CountDownLatch start = new CountDownLatch(1);
				AtomicInteger winners = new AtomicInteger();
				List<Future<?>> futures = new ArrayList<>();
				for (int i = 0; i < 6; i++) {
					JdbcLockBackend client = clients.get(i % clients.size());
					futures.add(executor.submit(() -> {
						start.await();
						if (client.tryAcquire(key, owner(), Duration.ofSeconds(10)).acquired()) {
							winners.incrementAndGet();
						}
						return null;
					}));
				}
				start.countDown();
				for (Future<?> future : futures) {
					future.get(10, TimeUnit.SECONDS);
				}
				assertThat(winners).hasValue(1);
			}
		}
		finally {
			executor.shutdownNow();
		}
	}

	/**
	 * A pool whose connections default to the strictest isolation: under contention for one row
	 * the lock statements report "held", never a serialization failure or deadlock as
	 * {@code LockBackendException}. Before: PostgreSQL aborted contended upserts with 40001.
	 */
	@Test
	void contendedLockOnASerializablePoolIsHeldNotABackendFailure() throws Exception {
		HikariDataSource serializable = newDataSource();
		serializable.setTransactionIsolation("TRANSACTION_SERIALIZABLE");
		this.dataSources.add(serializable);
		JdbcLockBackend client = newBackend(serializable);
		String key = key();
		int threads = 4;
		CountDownLatch start = new CountDownLatch(1);
		AtomicInteger acquired = new AtomicInteger();
		List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
		ExecutorService executor = Executors.newFixedThreadPool(threads);
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (int i = 0; i < threads; i++) {
				futures.add(executor.submit(() -> {
					start.await();
					for (int n = 0; n < 150; n++) {
						String owner = owner();
						try {
							if (client.tryAcquire(key, owner, Duration.ofSeconds(10)).acquired()) {
								acquired.incrementAndGet();
								client.release(key, owner);
							}
						}
						catch (RuntimeException ex) {
							failures.add(ex);
						}
					}
					return null;
				}));
			}
			start.countDown();
			for (Future<?> future : futures) {
				future.get(60, TimeUnit.SECONDS);
			}
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(failures).isEmpty();
		assertThat(acquired).hasPositiveValue();
		try (Connection connection = serializable.getConnection()) {
			// the pool's own setting is left as it was for the application
			assertThat(connection.getTransactionIsolation()).isEqualTo(Connection.TRANSACTION_SERIALIZABLE);
		}
	}

	@Test
	void lockStatementsNeverJoinTheCallersTransaction() throws Exception {
		DataSource dataSource = dataSource();
		JdbcLockBackend a = newBackend(dataSource);
		JdbcLockBackend b = newBackend();
		JdbcTemplate jdbc = new JdbcTemplate(dataSource);
		TransactionTemplate transaction = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
		String released = key();
		String kept = key();
		ExecutorService other = Executors.newSingleThreadExecutor();
		try {
			transaction.executeWithoutResult((status) -> {
				// the caller's transaction holds a connection and has written something
				jdbc.queryForObject("SELECT COUNT(*) FROM holdfast_lock", Long.class);
				jdbc.update("INSERT INTO holdfast_lock (lock_key, owner_token, fence, expires_at, acquired_at, holder)"
						+ " VALUES (?, 'x', 1, 0, 0, 'test')", key());
				String owner = owner();
				assertThat(a.tryAcquire(released, owner, Duration.ofSeconds(10)).acquired()).isTrue();
				assertThat(a.release(released, owner)).isTrue();
				assertThat(a.tryAcquire(kept, owner(), Duration.ofSeconds(10)).acquired()).isTrue();
				// while the caller's transaction is still open, another client sees the release
				// and the acquisition, and is not blocked by row locks of that transaction
				try {
					assertThat(other.submit(() -> b.tryAcquire(released, owner(), Duration.ofSeconds(10)))
						.get(5, TimeUnit.SECONDS)
						.acquired()).isTrue();
					assertThat(other.submit(() -> b.tryAcquire(kept, owner(), Duration.ofSeconds(10)))
						.get(5, TimeUnit.SECONDS)
						.acquired()).isFalse();
				}
				catch (Exception ex) {
					throw new IllegalStateException(ex);
				}
				status.setRollbackOnly();
			});
		}
		finally {
			other.shutdownNow();
		}
		// the caller's rollback did not undo the acquisition made inside it
		assertThat(b.tryAcquire(kept, owner(), Duration.ofSeconds(10)).acquired()).isFalse();
	}

	@Test
	void missingTableFailsWithTheScriptToRun() {
		JdbcLockBackend backend = new JdbcLockBackend(dataSource(), "holdfast_missing_table", Duration.ofSeconds(5));
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(backend::checkTable)
			.withMessageContaining("holdfast_missing_table")
			.satisfies((ex) -> assertThat(ex.getAction()).contains("dev/holdfast/jdbc/schema-" + platform() + ".sql")
				.contains("holdfast.jdbc.initialize-schema=always"));
		newBackend().checkTable();
	}

}
