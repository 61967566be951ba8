package dev.holdfast.jdbc;

import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

import org.springframework.jdbc.core.JdbcTemplate;

import dev.holdfast.test.server.PostgresServer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link JdbcLockBackend} on a real PostgreSQL server.
 */
class PostgresJdbcBackendTests extends AbstractJdbcSharedLocksTests {

	@BeforeAll
	static void createSchema() {
		try (HikariDataSource dataSource = PostgresServer.shared().newDataSource()) {
			createSchema(dataSource, "postgresql");
		}
	}

	@Override
	protected HikariDataSource newDataSource() {
		return PostgresServer.shared().newDataSource();
	}

	@Override
	protected String farSessionTimeZoneSql() {
		return "SET TIME ZONE 'Pacific/Kiritimati'";
	}

	@Override
	protected String platform() {
		return "postgresql";
	}

	@Override
	protected void installStall(JdbcTemplate operator, String table) {
		operator.execute("CREATE OR REPLACE FUNCTION holdfast_stall() RETURNS trigger LANGUAGE plpgsql AS $$"
				+ " BEGIN IF NEW.owner_token LIKE 'stall:%' THEN UPDATE holdfast_gate SET n = n + 1; END IF;"
				+ " RETURN NEW; END $$");
		operator.execute("CREATE TRIGGER holdfast_stall BEFORE INSERT ON " + table
				+ " FOR EACH ROW EXECUTE FUNCTION holdfast_stall()");
	}

	@Override
	protected long lockWaits(JdbcTemplate operator) {
		return operator.queryForObject("SELECT COUNT(*) FROM pg_locks WHERE NOT granted", Long.class);
	}

	/**
	 * The acquisition is the upsert alone: no CTE and no second read of the row in the same
	 * statement, which made every acquisition cost the server about a fifth more. Its plan has
	 * the insert with its conflict check on the primary key, and no scan of the table.
	 */
	@Test
	void acquisitionPlanIsTheUpsertAloneWithoutAScanOfTheTable() throws Exception {
		JdbcLockBackend backend = newBackend();
		backend.checkTable();
		PostgreSqlDialect dialect = (PostgreSqlDialect) backend.connections().dialect();
		String plan;
		try (Connection connection = dataSource().getConnection();
				PreparedStatement ps = connection.prepareStatement("EXPLAIN (VERBOSE) " + dialect.acquireSql())) {
			ps.setString(1, key());
			ps.setString(2, owner());
			ps.setLong(3, 10_000_000);
			ps.setString(4, "test");
			ps.setString(5, null);
			StringBuilder lines = new StringBuilder();
			try (ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					lines.append(rs.getString(1)).append('\n');
				}
			}
			plan = lines.toString();
		}
		assertThat(plan).contains("Insert on").contains("Conflict Arbiter Indexes").contains("clock_timestamp()")
			.doesNotContain("CTE").doesNotContain("SubPlan").doesNotContain("Index Scan").doesNotContain("Seq Scan");
	}

	/**
	 * The shipped table is created at fillfactor 25: every acquisition and release updates the
	 * key's row in place, and a page pruned only when nearly full lets the chain of dead
	 * versions that each statement walks grow to dozens (docs/decisions/0027).
	 */
	@Test
	void schemaLeavesRoomForShortUpdateChains() throws Exception {
		JdbcTemplate operator = createTable("holdfast_fillfactor_lock");
		assertThat(operator.queryForObject("SELECT array_to_string(reloptions, ',') FROM pg_class"
				+ " WHERE oid = to_regclass('holdfast_fillfactor_lock')", String.class)).isEqualTo("fillfactor=25");
	}

	@Override
	protected boolean sweepSkipsLockedRows() {
		return true;
	}

	/** The sweep deletes at most its limit of rows. */
	@Test
	void sweepDeletesAtMostItsLimit() throws Exception {
		String table = "holdfast_sweep_limit_lock";
		JdbcTemplate operator = createTable(table);
		String longAgo = "(date_part('epoch', clock_timestamp()) * 1000000)::bigint - 14400000000";
		for (int i = 0; i < 5; i++) {
			operator.update("INSERT INTO " + table + " VALUES (?, '', " + longAgo + ", " + longAgo + ", 0, 'released')",
					"old-" + i);
		}
		PostgreSqlDialect dialect = new PostgreSqlDialect(table, 5, "holdfast_sweep_limit", PostgreSqlDialect.CLAIM_WINDOW_MICROS,
				"0123456789ab");
		try (Connection connection = dataSource().getConnection()) {
			assertThat(dialect.sweep(connection, 60_000_000, 2)).isEqualTo(2);
		}
		assertThat(operator.queryForList("SELECT lock_key FROM " + table, String.class)).hasSize(3);
	}

	/**
	 * The sweep passes by a row another statement has locked (SKIP LOCKED) instead of waiting for
	 * it, so it takes no part in a lock-order cycle with the several-key statement (MKY-6).
	 */
	@Test
	void sweepPassesByARowAnotherStatementHasLockedWithoutWaiting() throws Exception {
		String table = "holdfast_sweep_skip_lock";
		JdbcTemplate operator = createTable(table);
		JdbcLockBackend backend = newBackend(dataSource(), table);
		String longAgo = "(date_part('epoch', clock_timestamp()) * 1000000)::bigint - 14400000000";
		for (String key : List.of("locked", "free")) {
			operator.update("INSERT INTO " + table + " VALUES (?, '', " + longAgo + ", " + longAgo + ", 0, 'released')",
					key);
		}
		ExecutorService executor = Executors.newSingleThreadExecutor();
		try (Connection other = dataSource().getConnection(); Statement statement = other.createStatement()) {
			other.setAutoCommit(false);
			statement.executeQuery("SELECT 1 FROM " + table + " WHERE lock_key = 'locked' FOR UPDATE").close();
			assertThat(executor.submit(backend.sweeper()::sweep).get(10, TimeUnit.SECONDS)).as("rows swept").isOne();
			other.commit();
		}
		finally {
			executor.shutdownNow();
		}
		assertThat(operator.queryForList("SELECT lock_key FROM " + table, String.class)).containsExactly("locked");
	}

	/**
	 * A reservation is a row with no owner whose holder names the instance it is kept for. A live
	 * row with an owner is never taken by an acquisition, whatever its holder text begins with:
	 * exclusion does not rest on how holders are described (review of 305689e, which tested the
	 * holder alone).
	 */
	@Test
	void liveOwnedRowIsNotTakenWhateverItsHolderText() {
		DataSource dataSource = dataSource();
		JdbcLockBackend backend = newBackend(dataSource);
		String key = key();
		assertThat(backend.tryAcquire(key, "holder", Duration.ofSeconds(30)).acquired()).isTrue();
		new JdbcTemplate(dataSource).update("UPDATE holdfast_lock SET holder = ? WHERE lock_key = ?",
				PostgreSqlDialect.RESERVED + "[" + backend.instance() + "][000000000000]pid 1@host thread", key);
		assertThat(backend.tryAcquire(key, "intruder", Duration.ofSeconds(30)).acquired()).isFalse();
		assertThat(backend.release(key, "holder")).isTrue();
	}

	/**
	 * The PostgreSQL driver bounds a silent server with the network timeout, so lock statements
	 * set no statement timeout, which would schedule a task on the driver's cancellation timer for
	 * every statement. A connection without network timeouts keeps the statement timeout.
	 */
	@Test
	void statementTimeoutOnlyWhereTheConnectionHasNoNetworkTimeout() {
		JdbcLockBackend withNetworkTimeout = newBackend();
		String key = key();
		String owner = owner();
		assertThat(withNetworkTimeout.tryAcquire(key, owner, Duration.ofSeconds(10)).acquired()).isTrue();
		assertThat(withNetworkTimeout.connections().dialect().queryTimeoutSeconds()).isZero();
		JdbcLockBackend withoutNetworkTimeout = newBackend(withoutNetworkTimeouts(dataSource()));
		assertThat(withoutNetworkTimeout.tryAcquire(key, owner(), Duration.ofSeconds(10)).acquired()).isFalse();
		assertThat(withoutNetworkTimeout.connections().dialect().queryTimeoutSeconds())
			.isEqualTo(withoutNetworkTimeout.connections().queryTimeoutSeconds())
			.isPositive();
		assertThat(withNetworkTimeout.release(key, owner)).isTrue();
	}

	/**
	 * A waiting reader refused by a writer marks the row so that the writer's release is
	 * announced, with a mark that names no instance (RWL-37): the release draws no reservation for
	 * it. A try-once reader marks nothing.
	 */
	@Test
	void aWaitingReaderRefusedByAWriterMarksTheRowAndTheWritersReleaseIsAnnounced() throws Exception {
		JdbcLockBackend writers = newBackend();
		JdbcLockBackend readers = newBackend();
		JdbcTemplate operator = new JdbcTemplate(dataSource());
		String key = key();
		String writer = owner();
		assertThat(writers.tryAcquire(key, writer, Duration.ofSeconds(10)).acquired()).isTrue();
		assertThat(readers.tryAcquireShared(key, owner(), Duration.ofSeconds(10), Duration.ZERO).acquired()).isFalse();
		assertThat(holder(operator, key)).doesNotStartWith(PostgreSqlDialect.MARK);
		assertThat(readers.tryAcquireShared(key, owner(), Duration.ofSeconds(10), Duration.ofSeconds(1)).acquired())
			.isFalse();
		assertThat(holder(operator, key)).startsWith(JdbcSharedLocks.READER_MARK);
		writers.localFirst(() -> false);
		assertThat(announced(key, () -> writers.releaseWanted(key, writer))).containsExactly(key);
		assertThat(readers.tryAcquireShared(key, owner(), Duration.ofSeconds(10), Duration.ZERO).acquired())
			.as("no reservation was drawn for the reader's mark").isTrue();
	}

	/** The last reader's release of a record that a refused writer marked is announced (RWL-37). */
	@Test
	void theLastReadersReleaseOfARecordAWriterMarkedIsAnnounced() throws Exception {
		JdbcLockBackend readers = newBackend();
		JdbcLockBackend writers = newBackend();
		String key = key();
		String r1 = owner();
		String r2 = owner();
		assertThat(readers.tryAcquireShared(key, r1, Duration.ofSeconds(10), Duration.ZERO).acquired()).isTrue();
		assertThat(readers.tryAcquireShared(key, r2, Duration.ofSeconds(10), Duration.ZERO).acquired()).isTrue();
		assertThat(writers.tryAcquire(key, owner(), Duration.ofSeconds(10)).acquired()).isFalse();
		assertThat(announced(key, () -> readers.release(key, r1))).isEmpty();
		assertThat(announced(key, () -> readers.release(key, r2))).containsExactly(key);
	}

	private static String holder(JdbcTemplate operator, String key) {
		return operator.queryForObject("SELECT holder FROM holdfast_lock WHERE lock_key = ?", String.class, key);
	}

	/** The announcements of {@code key} on the table's channel within a second after {@code release}, which must succeed. */
	private List<String> announced(String key, java.util.function.BooleanSupplier release) throws Exception {
		String channel = PostgresReleaseListener.releaseChannel("public." + JdbcLockBackend.DEFAULT_TABLE_NAME);
		try (Connection listening = dataSource().getConnection()) {
			try (Statement statement = listening.createStatement()) {
				statement.execute("LISTEN " + channel);
			}
			assertThat(release.getAsBoolean()).isTrue();
			PGConnection pg = listening.unwrap(PGConnection.class);
			List<String> keys = new ArrayList<>();
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
			while (System.nanoTime() < deadline) {
				PGNotification[] notifications = pg.getNotifications(100);
				for (PGNotification notification : (notifications != null) ? notifications : new PGNotification[0]) {
					// empty: a listener's check of its own connection, not a release
					if (channel.equals(notification.getName()) && notification.getParameter().startsWith(key)) {
						keys.add(notification.getParameter());
					}
				}
			}
			return keys;
		}
	}

	/** {@code dataSource} with connections whose driver refuses network timeouts. */
	private static DataSource withoutNetworkTimeouts(DataSource dataSource) {
		return (DataSource) Proxy.newProxyInstance(PostgresJdbcBackendTests.class.getClassLoader(),
				new Class<?>[] { DataSource.class }, (proxy, method, args) -> {
					Object result = invoke(dataSource, method, args);
					if (!method.getName().equals("getConnection")) {
						return result;
					}
					Connection connection = (Connection) result;
					return Proxy.newProxyInstance(PostgresJdbcBackendTests.class.getClassLoader(),
							new Class<?>[] { Connection.class }, (p, m, a) -> {
								if (m.getName().endsWith("NetworkTimeout")) {
									throw new SQLFeatureNotSupportedException("no network timeouts here");
								}
								return invoke(connection, m, a);
							});
				});
	}

	@Test
	void aClientStoppedInsideAReadHoldTransactionHoldsTheKeyNoLongerThanTheQueryTimeout() throws Exception {
		assertAClientStoppedInsideAReadHoldTransactionHoldsTheKeyNoLongerThanTheQueryTimeout();
	}

}
