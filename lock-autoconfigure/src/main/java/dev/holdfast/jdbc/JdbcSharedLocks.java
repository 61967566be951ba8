package dev.holdfast.jdbc;

import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;

/**
 * Read holds in the lock table (decision 0048, RWL-30 to RWL-39), without a schema change. While a
 * key is read-held its record row is owned by {@value #READERS}, expires at the latest expiry of
 * its live readers and keeps the fence it took when the group formed, one past the previous
 * (RWL-35). Each reader is a row of its own, key
 * <code>{r}&lt;hash of the key&gt;&lt;hash of the owner&gt;</code>, owner the reader's, expiry its
 * lease, {@code fence} the group's generation (the record's fence); it counts only while the
 * record is {@value #READERS} with that fence and its own expiry is ahead. A waiting writer's
 * stamp is the row <code>{w}&lt;hash of the key&gt;</code>, owner empty, until
 * when it lives, and the record's fence it was written under: it refuses readers only while the
 * record keeps that fence. Lock keys have no brace, so no such row meets a lock's record.
 * <p>
 * Every operation is one transaction that locks the record row first (created as the exclusive
 * upsert creates it), so attempts, releases and renewals of one key's readers are serialized.
 */
final class JdbcSharedLocks {

	/** The owner of a read-held record; owner tokens are base64url, none starts with {@code ~}. */
	static final String READERS = "~readers";

	/** What a reader refused by a writer writes on PostgreSQL: a mark that announces and names no instance. */
	static final String READER_MARK = "*[~~~~~~~~~~~~]";

	/**
	 * The order a renewal locks records in: unsigned UTF-8 bytes, as PostgreSQL's {@code COLLATE "C"}
	 * of the several-key statement (MKY-6); {@code String.compareTo} (UTF-16) differs above U+FFFF.
	 */
	static final Comparator<String> KEY_ORDER = (a, b) -> Arrays.compareUnsigned(a.getBytes(StandardCharsets.UTF_8),
			b.getBytes(StandardCharsets.UTF_8));

	private static final Log logger = LogFactory.getLog(JdbcLockBackend.class);

	private static final String PG_IDLE = "idle_in_transaction_session_timeout";

	/**
	 * MariaDB's idle transaction timeouts: the write and read-only ones take precedence over the
	 * general one where set, so each is bounded; each is saved in {@code @holdfast_<name>}.
	 */
	private static final List<String> MARIADB_IDLE = List.of("idle_transaction_timeout",
			"idle_write_transaction_timeout", "idle_readonly_transaction_timeout");

	/** Puts back the session's idle transaction timeouts that the transaction's first statement saved (MariaDB). */
	private static final String RESTORE = "SET "
			+ String.join(", ", MARIADB_IDLE.stream().map((v) -> v + " = @holdfast_" + v).toList());

	private final JdbcConnections connections;

	JdbcSharedLocks(JdbcConnections connections) {
		this.connections = connections;
	}

	AcquireResult tryAcquire(String key, String owner, Duration ttl, Duration recordFor) {
		Assert.hasLength(owner, "'owner' must not be empty");
		long ttlMicros = Math.multiplyExact(ttl.toMillis(), 1000);
		boolean waits = !recordFor.isZero();
		String holder = this.connections.holder();
		return this.connections.execute("take a read hold of", key,
				(dialect, c) -> inTransaction(c, dialect, () -> acquire(dialect, c, key, owner, ttlMicros, waits, holder)));
	}

	private AcquireResult acquire(JdbcLockDialect dialect, Connection c, String key, String owner, long ttlMicros,
			boolean waits, String holder) throws SQLException {
		String readerKey = JdbcKeys.readerKey(key, owner);
		Rows rows = lockAndRead(dialect, c, key, holder, readerKey);
		Row record = rows.record;
		long now = rows.now;
		boolean live = record.expiresAt > now;
		boolean group = live && READERS.equals(record.owner);
		Row stamp = rows.stamp;
		if (stamp != null && stamp.expiresAt > now && stamp.fence == record.fence && (group || !live)) {
			return AcquireResult.held(JdbcLockDialect.remainingMillis(stamp.expiresAt - now));
		}
		Row own = rows.own;
		long expiresAt = now + ttlMicros;
		if (group && own != null && own.owner.equals(owner) && own.fence == record.fence && own.expiresAt > now) {
			// a join or a resend: the owner's lease and the record reach now + ttl, never lowered (RWL-31)
			if (own.expiresAt < expiresAt) {
				dialect.update(c, "UPDATE " + dialect.table + " SET expires_at = ? WHERE lock_key = ?", expiresAt, readerKey);
				dialect.update(c, "UPDATE " + dialect.table + " SET expires_at = ? WHERE lock_key = ? AND expires_at < ?",
						expiresAt, key, expiresAt);
			}
			return AcquireResult.acquired(record.fence);
		}
		if (live && !group) {
			if (waits && dialect instanceof PostgreSqlDialect && !record.holder.startsWith(PostgreSqlDialect.MARK)
					&& !record.holder.startsWith(PostgreSqlDialect.RESERVED)) {
				dialect.update(c, "UPDATE " + dialect.table + " SET holder = ? WHERE lock_key = ?",
						truncate(READER_MARK + record.holder), key);
			}
			return AcquireResult.held(JdbcLockDialect.remainingMillis(record.expiresAt - now));
		}
		long fence = group ? record.fence : record.fence + 1;
		if (group) {
			if (own != null) {
				dialect.update(c, "DELETE FROM " + dialect.table + " WHERE lock_key = ?", readerKey);
			}
			dialect.update(c, "UPDATE " + dialect.table + " SET expires_at = ? WHERE lock_key = ? AND expires_at < ?",
					expiresAt, key, expiresAt);
		}
		else {
			deleteReaders(dialect, c, key);
			// a new generation: an ended group's reader that comes back gets a new token (RWL-35)
			dialect.update(c, "UPDATE " + dialect.table + " SET owner_token = ?, fence = ?, expires_at = ?,"
					+ " acquired_at = ?, holder = ? WHERE lock_key = ?", READERS, fence, expiresAt, now, holder, key);
		}
		dialect.update(c, "INSERT INTO " + dialect.table + " (lock_key, owner_token, fence, expires_at, acquired_at,"
				+ " holder) VALUES (?, ?, ?, ?, ?, ?)", readerKey, owner, fence, expiresAt, now, holder);
		return AcquireResult.acquired(fence);
	}

	/**
	 * Releases {@code owner}'s read hold of {@code key}, if it has a row: the last live reader of
	 * the group frees the record (expired now, fence kept) and deletes the group's rows; another
	 * sets the record's expiry to the latest of the live readers'. Whether the hold was live.
	 */
	boolean release(String key, String owner) {
		String readerKey = JdbcKeys.readerKey(key, owner);
		return this.connections.execute("release a read hold of", key, (dialect, c) -> {
			if (read(dialect, c, readerKey) == null) {
				return false; // not a reader either: one plain read, no transaction
			}
			String holder = this.connections.holder();
			Boolean announce = inTransaction(c, dialect, () -> {
				Rows rows = lockAndRead(dialect, c, key, holder, readerKey);
				Row own = rows.own;
				if (own == null || !own.owner.equals(owner)) {
					return null;
				}
				dialect.update(c, "DELETE FROM " + dialect.table + " WHERE lock_key = ?", readerKey);
				Row record = rows.record;
				if (!READERS.equals(record.owner) || own.fence != record.fence || own.expiresAt <= rows.now
						|| record.expiresAt <= rows.now) {
					return null;
				}
				long latest = latestLiveReader(dialect, c, key, record.fence, rows.now);
				if (latest > 0) {
					dialect.update(c, "UPDATE " + dialect.table + " SET expires_at = ? WHERE lock_key = ?", latest, key);
					return false;
				}
				dialect.update(c, "UPDATE " + dialect.table + " SET owner_token = '', expires_at = ? WHERE lock_key = ?",
						rows.now, key);
				deleteReaders(dialect, c, key);
				return record.holder.startsWith(PostgreSqlDialect.MARK);
			});
			if (Boolean.TRUE.equals(announce) && dialect instanceof PostgreSqlDialect postgres) {
				postgres.announceRelease(c, key);
			}
			return announce != null;
		});
	}

	/** Renews each hold whose owner is a live reader of its key's group; records locked in key order. */
	Set<String> renew(Collection<HeldLock> holds) {
		if (holds.isEmpty()) {
			return Set.of();
		}
		List<HeldLock> sorted = new ArrayList<>(holds);
		sorted.sort(Comparator.comparing(HeldLock::key, KEY_ORDER));
		String holder = this.connections.holder();
		return this.connections.execute("renew " + holds.size() + " read hold(s)", null,
				(dialect, c) -> inTransaction(c, dialect, () -> {
					Set<String> renewed = new HashSet<>();
					for (HeldLock hold : sorted) {
						String readerKey = JdbcKeys.readerKey(hold.key(), hold.owner());
						Rows rows = lockAndRead(dialect, c, hold.key(), holder, readerKey);
						Row record = rows.record;
						long expiresAt = rows.now + hold.ttl().toMillis() * 1000;
						if (READERS.equals(record.owner) && record.expiresAt > rows.now && dialect.update(c, "UPDATE "
								+ dialect.table + " SET expires_at = ? WHERE lock_key = ? AND owner_token = ? AND fence = ?"
								+ " AND expires_at > ?", expiresAt, readerKey, hold.owner(), record.fence, rows.now) > 0) {
							dialect.update(c, "UPDATE " + dialect.table + " SET expires_at = ? WHERE lock_key = ?"
									+ " AND expires_at < ?", expiresAt, hold.key(), expiresAt);
							renewed.add(hold.key());
						}
					}
					return renewed;
				}));
	}

	/**
	 * After a waiting writer's refusal: when the record is read-held (or free and stamped under
	 * its fence), stamps that a writer waits, until {@code recordForMicros} from now by the
	 * database clock, under the record's fence; a longer stamp of the same fence stays.
	 */
	AcquireResult stampIfRefused(AcquireResult attempt, String key, Duration recordFor) {
		if (!attempt.acquired()) {
			stampWaitingWriter(key, Math.multiplyExact(recordFor.toMillis(), 1000));
		}
		return attempt;
	}

	private void stampWaitingWriter(String key, long recordForMicros) {
		String holder = this.connections.holder();
		String stampKey = JdbcKeys.stampKey(key);
		this.connections.execute("record a waiting writer of", key, (dialect, c) -> inTransaction(c, dialect, () -> {
			Rows rows = lockAndRead(dialect, c, key, holder, stampKey);
			Row record = rows.record;
			if (!READERS.equals(record.owner) || record.expiresAt <= rows.now) {
				return null;
			}
			long until = rows.now + recordForMicros;
			Row stamp = rows.own;
			if (stamp == null) {
				dialect.update(c, "INSERT INTO " + dialect.table + " (lock_key, owner_token, fence, expires_at,"
						+ " acquired_at, holder) VALUES (?, '', ?, ?, ?, ?)", stampKey, record.fence, until, rows.now, holder);
			}
			else if (stamp.fence != record.fence || stamp.expiresAt < until) {
				dialect.update(c, "UPDATE " + dialect.table + " SET fence = ?, expires_at = ?, acquired_at = ?, holder = ?"
						+ " WHERE lock_key = ?", record.fence, until, rows.now, holder, stampKey);
			}
			return null;
		}));
	}

	/**
	 * Locks the record row of {@code key}, creating it free if absent with the dialect's upsert,
	 * then reads it with the database clock, the stamp row and the row at {@code otherKey}.
	 */
	private Rows lockAndRead(JdbcLockDialect dialect, Connection c, String key, String holder, String otherKey)
			throws SQLException {
		dialect.lockRecord(c, key, holder);
		String clock = dialect.clockSql();
		long now = (clock != null) ? 0 : dialect.clock(c);
		Row record = null;
		Row stamp = null;
		Row other = null;
		String stampKey = JdbcKeys.stampKey(key);
		try (PreparedStatement ps = dialect.prepare(c, "SELECT lock_key, owner_token, fence, expires_at, holder"
				+ ((clock != null) ? ", " + clock : "") + " FROM " + dialect.table + " WHERE lock_key IN (?, ?, ?)")) {
			ps.setString(1, key);
			ps.setString(2, stampKey);
			ps.setString(3, otherKey);
			try (ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					Row row = new Row(rs.getString(2), rs.getLong(3), rs.getLong(4), rs.getString(5));
					if (clock != null) {
						now = rs.getLong(6);
					}
					String rowKey = rs.getString(1);
					if (rowKey.equals(key)) {
						record = row;
					}
					else if (rowKey.equals(otherKey)) {
						other = row;
					}
					else {
						stamp = row;
					}
				}
			}
		}
		if (record == null) {
			// deleted between the upsert and the read (swept): the statement aborted changes nothing
			throw new SQLException("The lock row of '" + key + "' vanished under its lock", "40001");
		}
		return new Rows(record, stamp, other, now);
	}

	private static @Nullable Row read(JdbcLockDialect dialect, Connection c, String rowKey) throws SQLException {
		try (PreparedStatement ps = dialect.prepare(c, "SELECT owner_token, fence, expires_at, holder FROM "
				+ dialect.table + " WHERE lock_key = ?")) {
			ps.setString(1, rowKey);
			try (ResultSet rs = ps.executeQuery()) {
				return rs.next() ? new Row(rs.getString(1), rs.getLong(2), rs.getLong(3), rs.getString(4)) : null;
			}
		}
	}

	/** The latest expiry of the live readers of {@code key} in generation {@code fence}; 0 if none. */
	private static long latestLiveReader(JdbcLockDialect dialect, Connection c, String key, long fence, long now)
			throws SQLException {
		return ofLiveReaders(dialect, c, "MAX(expires_at)", key, fence, now);
	}

	/** How many readers of {@code key} in generation {@code fence} are live: a listing's holder (RWL-38). */
	static long liveReaders(JdbcLockDialect dialect, Connection c, String key, long fence, long now)
			throws SQLException {
		return ofLiveReaders(dialect, c, "COUNT(*)", key, fence, now);
	}

	/** {@code aggregate} over the live reader rows of {@code key} in generation {@code fence}; 0 if none. */
	private static long ofLiveReaders(JdbcLockDialect dialect, Connection c, String aggregate, String key, long fence,
			long now) throws SQLException {
		try (PreparedStatement ps = dialect.prepare(c, "SELECT " + aggregate + " FROM " + dialect.table + " WHERE "
				+ READERS_OF + " AND fence = ? AND expires_at > ?")) {
			int index = bindReadersOf(ps, key);
			ps.setLong(index++, fence);
			ps.setLong(index, now);
			try (ResultSet rs = ps.executeQuery()) {
				return rs.next() ? rs.getLong(1) : 0;
			}
		}
	}

	private static void deleteReaders(JdbcLockDialect dialect, Connection c, String key) throws SQLException {
		try (PreparedStatement ps = dialect.prepare(c, "DELETE FROM " + dialect.table + " WHERE " + READERS_OF)) {
			bindReadersOf(ps, key);
			ps.executeUpdate();
		}
	}

	/**
	 * The reader rows of one key: a range on the primary key (which its index serves whatever the
	 * collation, where {@code LIKE} would not), then the exact prefix, since a collation that
	 * ignores punctuation may sort other keys inside the range.
	 */
	private static final String READERS_OF = "lock_key >= ? AND lock_key < ? AND SUBSTRING(lock_key FROM 1 FOR "
			+ JdbcKeys.readerPrefix("").length() + ") = ?";

	private static int bindReadersOf(PreparedStatement ps, String key) throws SQLException {
		String prefix = JdbcKeys.readerPrefix(key);
		ps.setString(1, prefix);
		ps.setString(2, prefix + "g"); // after every hexadecimal digit
		ps.setString(3, prefix);
		return 4;
	}

	private static String truncate(String holder) {
		return (holder.length() <= 255) ? holder : holder.substring(0, 255);
	}

	/**
	 * Runs {@code work} in one transaction at {@code READ COMMITTED} (on MySQL and MariaDB, whose
	 * default {@code REPEATABLE READ} would lock gaps of the readers' key range, one
	 * {@code SET TRANSACTION}, which sets the next transaction's level only), rolled back if it
	 * throws; the connection goes back to autocommit. The transaction may sit idle between its
	 * statements at most the query timeout where the database can bound it (RWL-39): a client
	 * stopped there would keep the record row locked; the server ends its session instead.
	 */
	private <T> @Nullable T inTransaction(Connection c, JdbcLockDialect dialect, Transaction<T> work)
			throws SQLException {
		boolean bounded = dialect.boundsIdleTransactions(); // PostgreSQL 9.6+, MariaDB 10.3+ only
		boolean restore = false;
		@Nullable Exception primary = null;
		c.setAutoCommit(false);
		try {
			int millis = this.connections.timeoutMillis();
			if (bounded && dialect instanceof PostgreSqlDialect) {
				// SET LOCAL, never raising a stricter setting (LEAST skips the NULL of 0, none)
				execute(c, dialect, "SELECT set_config('" + PG_IDLE + "', LEAST(NULLIF(setting::bigint, 0), " + millis
						+ ")::text, true) FROM pg_settings WHERE name = '" + PG_IDLE + "'");
			}
			else if (dialect instanceof MySqlDialect) {
				if (bounded) {
					execute(c, dialect, saveAndBound((millis + 999) / 1000));
					restore = true;
				}
				execute(c, dialect, "SET TRANSACTION ISOLATION LEVEL READ COMMITTED");
			}
			T result = work.run();
			c.commit();
			return result;
		}
		catch (SQLException | RuntimeException ex) {
			primary = ex;
			try {
				c.rollback();
			}
			catch (SQLException rollback) {
				ex.addSuppressed(rollback);
			}
			throw ex;
		}
		finally {
			if (!c.isClosed()) {
				boolean aborted = false;
				try {
					if (restore) {
						// the session's own value again, for the pool's other users
						execute(c, dialect, RESTORE);
					}
				}
				catch (SQLException | RuntimeException failure) {
					abort(c, primary, failure);
					aborted = true;
				}
				finally {
					if (!aborted) {
						c.setAutoCommit(true);
					}
				}
			}
		}
	}

	/**
	 * After a failed restore: the outcome stands (a committed result is the truth; a primary
	 * exception keeps the failure as suppressed, else one WARN), and the connection is aborted and
	 * closed, so that no one inherits our timeout: a pool finds it dead (HikariCP evicts it at
	 * close, others fail it at validation) and callers see it closed.
	 */
	private static void abort(Connection c, @Nullable Exception primary, Exception failure) {
		if (primary != null) {
			primary.addSuppressed(failure);
		}
		else {
			logger.warn("Could not restore the session's idle transaction timeout after a read-write transaction"
					+ " that completed; aborting its connection", failure);
		}
		try {
			c.abort(Runnable::run);
		}
		catch (SQLException | RuntimeException ex) {
			failure.addSuppressed(ex);
		}
		try {
			c.close();
		}
		catch (SQLException | RuntimeException ex) {
			// a pool that finds the aborted connection dead may say so: it is gone either way
		}
	}

	/**
	 * MariaDB: saves each idle transaction timeout of the session and bounds it by {@code seconds},
	 * never raising a stricter one (0 is none). All right-hand sides read the values before the
	 * statement, whatever the order MariaDB assigns in.
	 */
	private static String saveAndBound(int seconds) {
		List<String> assignments = new ArrayList<>();
		for (String v : MARIADB_IDLE) {
			assignments.add("@holdfast_" + v + " = @@session." + v);
		}
		for (String v : MARIADB_IDLE) {
			assignments.add(v + " = IF(@@session." + v + " BETWEEN 1 AND " + seconds + ", @@session." + v + ", " + seconds + ")");
		}
		return "SET " + String.join(", ", assignments);
	}

	private static void execute(Connection c, JdbcLockDialect dialect, String sql) throws SQLException {
		try (Statement statement = c.createStatement()) {
			statement.setQueryTimeout(dialect.queryTimeoutSeconds);
			statement.execute(sql);
		}
	}

	@FunctionalInterface
	private interface Transaction<T> {

		@Nullable T run() throws SQLException;

	}

	private record Row(String owner, long fence, long expiresAt, String holder) {
	}

	private record Rows(Row record, @Nullable Row stamp, @Nullable Row own, long now) {
	}

}
