package dev.holdfast.jdbc;

import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

import dev.holdfast.test.server.MariaDbServer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link JdbcLockBackend} on a real MariaDB server.
 */
class MariaDbJdbcBackendTests extends AbstractJdbcSharedLocksTests {

	@BeforeAll
	static void createSchema() {
		try (HikariDataSource dataSource = MariaDbServer.shared().newDataSource()) {
			createSchema(dataSource, "mariadb");
		}
	}

	@Override
	protected HikariDataSource newDataSource() {
		return MariaDbServer.shared().newDataSource();
	}

	@Override
	protected String farSessionTimeZoneSql() {
		return "SET time_zone = '+13:00'";
	}

	@Override
	protected String platform() {
		return "mariadb";
	}

	@Override
	protected void installStall(JdbcTemplate operator, String table) {
		operator.execute("CREATE TRIGGER holdfast_stall BEFORE INSERT ON " + table + " FOR EACH ROW"
				+ " BEGIN IF NEW.owner_token LIKE 'stall:%' THEN UPDATE holdfast_gate SET n = n + 1; END IF; END");
	}

	@Override
	protected long lockWaits(JdbcTemplate operator) {
		return operator.queryForObject(
				"SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'", Long.class);
	}

	/**
	 * MariaDB announces nothing, so a release never reserves a lock for an instance: after another
	 * instance's refused attempt, the release that a local racer waits for frees the lock for
	 * whoever comes first, as before, and the row's holder is left as it was.
	 */
	@Test
	void releaseWithAnotherInstanceWaitingFreesTheLockForAnyone() {
		JdbcLockBackend releasing = newBackend();
		JdbcLockBackend waiting = newBackend();
		JdbcLockBackend third = newBackend();
		String key = key();
		assertThat(releasing.tryAcquire(key, "a", Duration.ofSeconds(10)).acquired()).isTrue();
		String holder = new JdbcTemplate(dataSource())
			.queryForObject("SELECT holder FROM holdfast_lock WHERE lock_key = ?", String.class, key);
		assertThat(waiting.tryAcquire(key, "b", Duration.ofSeconds(10)).acquired()).isFalse();
		releasing.setFairHandoff(true);
		releasing.localFirst(() -> false);
		assertThat(releasing.drawsNextInstance()).isFalse();
		assertThat(releasing.releaseWanted(key, "a")).isTrue();
		assertThat(new JdbcTemplate(dataSource())
			.queryForObject("SELECT holder FROM holdfast_lock WHERE lock_key = ?", String.class, key))
			.isEqualTo(holder);
		assertThat(third.tryAcquire(key, "c", Duration.ofSeconds(10)).acquired()).isTrue();
		assertThat(third.release(key, "c")).isTrue();
	}

	@Test
	void aClientStoppedInsideAReadHoldTransactionHoldsTheKeyNoLongerThanTheQueryTimeout() throws Exception {
		assertAClientStoppedInsideAReadHoldTransactionHoldsTheKeyNoLongerThanTheQueryTimeout();
	}

	/**
	 * RWL-39 (review m1): a session whose {@code idle_write_transaction_timeout}, which takes
	 * precedence, would let a stopped client idle 600 s is bounded all the same.
	 */
	@Test
	void aClientStoppedInsideAReadHoldTransactionIsBoundedDespiteALongIdleWriteTransactionTimeout() throws Exception {
		assertAClientStoppedInsideAReadHoldTransactionHoldsTheKeyNoLongerThanTheQueryTimeout(
				"SET SESSION idle_write_transaction_timeout = 600, idle_readonly_transaction_timeout = 600");
	}

	/** RWL-39: the session's own idle transaction timeout is restored after a read-write transaction. */
	@Test
	void aReadHoldTransactionLeavesTheSessionsIdleTransactionTimeoutAsItFoundIt() throws Exception {
		try (HikariDataSource pool = newDataSource()) {
			SingleConnectionDataSource one = new SingleConnectionDataSource(pool.getConnection(), true);
			JdbcTemplate session = new JdbcTemplate(one);
			session.execute("SET SESSION idle_transaction_timeout = 7, idle_write_transaction_timeout = 600,"
					+ " idle_readonly_transaction_timeout = 0");
			JdbcLockBackend backend = newBackend(one);
			String key = key();
			assertThat(backend.tryAcquireShared(key, "r", Duration.ofSeconds(10), Duration.ZERO).acquired()).isTrue();
			assertThat(backend.release(key, "r")).isTrue();
			assertThat(session.queryForObject("SELECT CONCAT_WS(',', @@session.idle_transaction_timeout,"
					+ " @@session.idle_write_transaction_timeout, @@session.idle_readonly_transaction_timeout)", String.class))
				.isEqualTo("7,600,0");
			one.destroy();
		}
	}

	/**
	 * RWL-39 (review M2): a restore that fails after the commit keeps the committed result and
	 * aborts the connection, so that the pool's next borrower (of one connection) gets a fresh
	 * session, not our short timeout.
	 */
	@Test
	void aFailedRestoreKeepsTheCommittedResultAndAbortsTheConnection() throws Exception {
		try (HikariDataSource pool = newDataSource()) {
			pool.setMaximumPoolSize(1);
			AtomicBoolean failRestore = new AtomicBoolean(true);
			AtomicBoolean aborted = new AtomicBoolean();
			JdbcLockBackend backend = newBackend(failingRestore(pool, failRestore, aborted));
			String key = key();
			assertThat(backend.tryAcquireShared(key, "r", Duration.ofSeconds(10), Duration.ZERO).acquired())
				.as("committed, kept").isTrue();
			assertThat(aborted).isTrue();
			assertThat(new JdbcTemplate(pool).queryForObject("SELECT @@session.idle_transaction_timeout", Long.class))
				.as("a fresh session").isZero();
			failRestore.set(false);
			assertThat(backend.release(key, "r")).isTrue();
		}
	}

	/** Connections whose restore of the idle transaction timeout fails while {@code fail} is set. */
	private static DataSource failingRestore(DataSource dataSource, AtomicBoolean fail, AtomicBoolean aborted) {
		ClassLoader loader = MariaDbJdbcBackendTests.class.getClassLoader();
		return (DataSource) Proxy.newProxyInstance(loader, new Class<?>[] { DataSource.class }, (proxy, method, args) -> {
			Object result = invoke(dataSource, method, args);
			if (!method.getName().equals("getConnection")) {
				return result;
			}
			return Proxy.newProxyInstance(loader, new Class<?>[] { Connection.class }, (p, m, a) -> {
				if (m.getName().equals("abort")) {
					aborted.set(true);
				}
				Object value = invoke(result, m, a);
				if (!m.getName().equals("createStatement")) {
					return value;
				}
				return Proxy.newProxyInstance(loader, new Class<?>[] { Statement.class }, (sp, sm, sa) -> {
					if (sm.getName().equals("execute") && fail.get() && String.valueOf(sa[0]).contains("= @holdfast_idle")) {
						throw new SQLException("restore failed (test)");
					}
					return invoke(value, sm, sa);
				});
			});
		});
	}

}
