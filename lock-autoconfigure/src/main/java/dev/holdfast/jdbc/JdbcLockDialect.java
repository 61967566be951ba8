package dev.holdfast.jdbc;

import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.sql.SQLIntegrityConstraintViolationException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.jspecify.annotations.Nullable;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.TickClaims.TickClaim;

/**
 * The SQL of one database family. Every statement runs on a connection in autocommit mode, so
 * each is its own transaction. All times are microseconds since the Unix epoch, computed by the
 * database from its own clock; the JVM contributes durations only.
 */
abstract class JdbcLockDialect {

	/** Most keys renewed by one statement; larger renewals are split. */
	static final int RENEW_CHUNK = 500;

	protected final String table;

	protected final int queryTimeoutSeconds;

	/** Whether read-write transactions bound their idle time (RWL-39); set by {@link #detect} only. */
	private boolean boundsIdleTransactions;

	JdbcLockDialect(String table, int queryTimeoutSeconds) {
		this.table = table;
		this.queryTimeoutSeconds = queryTimeoutSeconds;
	}

	/** The {@code @@platform@@} value of the schema script for this database. */
	abstract String platform();

	abstract AcquireResult acquire(Connection connection, String key, String owner, long ttlMicros, String holder)
			throws SQLException;

	abstract Set<String> renew(Connection connection, Collection<HeldLock> locks) throws SQLException;

	/**
	 * Releases the lock if {@code owner} holds it, by expiring its row in place: the owner is
	 * cleared and the expiry set to the database's current time (never later than it was), while
	 * the fencing token stays, so that the next acquisition continues from it.
	 */
	abstract boolean release(Connection connection, String key, String owner) throws SQLException;

	/**
	 * Releases for this backend instance, a thread of which wants the key but waits for no
	 * announcement: where the dialect hands released locks to instances (PostgreSQL), a lock that
	 * another instance waits for is reserved for this instance if {@code localFirst}, else for
	 * that other instance; elsewhere the plain release.
	 */
	boolean releaseWanted(Connection connection, String key, String owner, boolean localFirst) throws SQLException {
		return release(connection, key, owner);
	}

	/** The database's current time in microseconds since the Unix epoch. */
	abstract long clock(Connection connection) throws SQLException;

	/** An SQL expression of {@link #clock}, or {@code null} where the clock is read on its own. */
	@Nullable String clockSql() {
		return null;
	}

	/**
	 * Locks the record row of {@code key} in the caller's transaction, inserting it free (no owner,
	 * expired now, fence = the database clock) if absent: here an {@code UPDATE} that changes
	 * nothing, else an {@code INSERT}; an insert that meets a racer's row aborts the work as a
	 * serialization failure, so that it runs again and finds the row.
	 */
	void lockRecord(Connection connection, String key, String holder) throws SQLException {
		if (update(connection, "UPDATE " + this.table + " SET fence = fence WHERE lock_key = ?", key) > 0) {
			return;
		}
		long now = clock(connection);
		try {
			update(connection, "INSERT INTO " + this.table + " (lock_key, owner_token, fence, expires_at, acquired_at,"
					+ " holder) VALUES (?, '', ?, ?, ?, ?)", key, now, now, now, holder);
		}
		catch (SQLException ex) {
			if (!isDuplicateKey(ex)) {
				throw ex;
			}
			throw new SQLException("A racer created the lock row of '" + key + "' first", "40001", ex);
		}
	}

	/**
	 * Records {@code tickMicros} in the tick record {@code key} if the tick is due by the database
	 * clock ({@code |now - tick| <= toleranceMicros}) and the record is absent, has expired on the
	 * database clock, or holds an earlier tick, and then lets it expire {@code ttlMicros} from now
	 * on the database clock; in one atomic step, so that of claims of one tick at most one
	 * succeeds. The record is a row whose {@code fence} holds the last claimed tick and whose
	 * owner is empty, so that no release or renewal matches it.
	 * @return the outcome, with the database's time
	 */
	abstract TickClaim claimTick(Connection connection, String key, long tickMicros, long toleranceMicros,
			long ttlMicros, String holder) throws SQLException;

	/**
	 * The answer to a claim of {@code tickMicros} that the statement decided: claimed, else, by the
	 * database's clock read now, not due or taken.
	 */
	protected TickClaim claimed(Connection connection, boolean claimed, long tickMicros, long toleranceMicros)
			throws SQLException {
		return answer(claimed, clock(connection), tickMicros, toleranceMicros);
	}

	/** The answer to a claim decided at {@code nowMicros} on the database clock. */
	static TickClaim answer(boolean claimed, long nowMicros, long tickMicros, long toleranceMicros) {
		TickClaim.Outcome outcome = claimed ? TickClaim.Outcome.CLAIMED
				: (Math.abs(nowMicros - tickMicros) > toleranceMicros) ? TickClaim.Outcome.NOT_DUE
						: TickClaim.Outcome.TAKEN;
		return new TickClaim(outcome, Instant.EPOCH.plus(nowMicros, ChronoUnit.MICROS));
	}

	/**
	 * Claims a tick where no upsert reports reliably whether it changed the row: an
	 * {@code UPDATE} that moves an existing record forward, and only when it matched no row an
	 * {@code INSERT} of the record. Each is atomic; a claim whose insert meets a record that
	 * another claim created meanwhile loses, whatever the ticks: that tick is skipped by this
	 * caller, never claimed twice.
	 */
	protected boolean updateElseInsert(Connection connection, String updateSql, Object[] updateParams,
			String insertSql, Object[] insertParams) throws SQLException {
		return update(connection, updateSql, updateParams) > 0
				|| updateUnlessDuplicate(connection, insertSql, insertParams) > 0;
	}

	/**
	 * Runs a statement that may insert a row, like {@link #update}; a row that another session
	 * inserted first under the same primary key counts as no row changed.
	 */
	protected int updateUnlessDuplicate(Connection connection, String sql, Object... params) throws SQLException {
		try {
			return update(connection, sql, params);
		}
		catch (SQLException ex) {
			if (!isDuplicateKey(ex)) {
				throw ex;
			}
			return 0;
		}
	}

	/**
	 * Deletes at most {@code limit} rows that expired, and whose fencing token was issued, more
	 * than {@code sweepAfterMicros} ago on the database clock. Candidates are read without locks,
	 * then deleted by primary key with the condition checked again, so a row that an acquisition
	 * took over in the meantime stays.
	 * @return how many rows were deleted
	 */
	int sweep(Connection connection, long sweepAfterMicros, int limit) throws SQLException {
		long cut = clock(connection) - sweepAfterMicros;
		List<String> keys = new ArrayList<>();
		try (PreparedStatement ps = prepare(connection,
				"SELECT lock_key FROM " + this.table + " WHERE expires_at < ? AND fence < ?")) {
			ps.setMaxRows(limit);
			ps.setLong(1, cut);
			ps.setLong(2, cut);
			try (ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					keys.add(rs.getString(1));
				}
			}
		}
		if (keys.isEmpty()) {
			return 0;
		}
		String in = String.join(", ", Collections.nCopies(keys.size(), "?"));
		try (PreparedStatement ps = prepare(connection, "DELETE FROM " + this.table + " WHERE lock_key IN (" + in
				+ ") AND expires_at < ? AND fence < ?")) {
			int index = 1;
			for (String key : keys) {
				ps.setString(index++, key);
			}
			ps.setLong(index++, cut);
			ps.setLong(index, cut);
			return ps.executeUpdate();
		}
	}

	/** Runs an {@code UPDATE} with {@code params} bound in order; returns the updated row count. */
	protected int update(Connection connection, String sql, Object... params) throws SQLException {
		try (PreparedStatement ps = prepare(connection, sql)) {
			for (int i = 0; i < params.length; i++) {
				ps.setObject(i + 1, params[i]);
			}
			return ps.executeUpdate();
		}
	}

	/**
	 * Reads no row of the lock table, naming each of Holdfast's columns.
	 * @return the length of the {@code lock_key} column as the driver reports it, or 0 if unknown
	 */
	int checkTable(Connection connection) throws SQLException {
		try (PreparedStatement ps = prepare(connection, "SELECT lock_key, owner_token, fence, expires_at, acquired_at, holder FROM "
				+ this.table + " WHERE 1 = 0"); ResultSet rs = ps.executeQuery()) {
			return Math.max(0, rs.getMetaData().getPrecision(1));
		}
	}

	/**
	 * Prepares an acquisition: the statement's first four parameters are the key, the owner
	 * token, the time to live in microseconds and the holder, in that order.
	 */
	protected PreparedStatement prepareAcquire(Connection connection, String sql, String key, String owner,
			long ttlMicros, String holder) throws SQLException {
		PreparedStatement ps = prepare(connection, sql);
		try {
			ps.setString(1, key);
			ps.setString(2, owner);
			ps.setLong(3, ttlMicros);
			ps.setString(4, holder);
			return ps;
		}
		catch (SQLException | RuntimeException ex) {
			ps.close();
			throw ex;
		}
	}

	/**
	 * Prepares {@code sql} with the statement timeout, if this dialect has one: 0 means that the
	 * connection's network timeout alone bounds the statement.
	 */
	protected PreparedStatement prepare(Connection connection, String sql) throws SQLException {
		PreparedStatement ps = connection.prepareStatement(sql);
		if (this.queryTimeoutSeconds > 0) {
			ps.setQueryTimeout(this.queryTimeoutSeconds);
		}
		return ps;
	}

	/** The statement timeout in seconds, 0 for none; for tests. */
	int queryTimeoutSeconds() {
		return this.queryTimeoutSeconds;
	}

	/** Whether read-write transactions bound their idle time (RWL-39). */
	boolean boundsIdleTransactions() {
		return this.boundsIdleTransactions;
	}

	/**
	 * Whether a database of {@code product} (lower case) and version {@code major.minor} has the
	 * idle-transaction timeout RWL-39 sets: PostgreSQL 9.6+ ({@code idle_in_transaction_session_timeout}),
	 * MariaDB 10.3+ ({@code idle_transaction_timeout} and its write and read-only variants). Below,
	 * the {@code SET} would fail every read-write operation, so there is none and no bound.
	 */
	static boolean boundsIdleTransactions(String product, int major, int minor) {
		int version = major * 100 + minor;
		return product.contains("postgresql") ? version >= 906 : product.contains("mariadb") && version >= 1003;
	}

	static long remainingMillis(long remainingMicros) {
		return Math.max(0, (remainingMicros + 999) / 1000);
	}

	/**
	 * Picks the dialect for the database behind {@code connection}. {@code networkTimeouts}: whether
	 * its driver accepted a network timeout. The PostgreSQL driver then sets no statement timeout:
	 * the network timeout fires first and closes the connection, so the statement timeout would
	 * never act, yet each statement with one schedules and cancels a task on the driver's shared
	 * cancellation timer, whose thread is woken every time. {@code claimWindowMicros} and
	 * {@code instance}: PostgreSQL's fair handoff ({@link PostgreSqlDialect}).
	 */
	static JdbcLockDialect detect(Connection connection, String table, int queryTimeoutSeconds,
			boolean networkTimeouts, long claimWindowMicros, String instance) throws SQLException {
		DatabaseMetaData metaData = connection.getMetaData();
		String product = metaData.getDatabaseProductName().toLowerCase(Locale.ROOT);
		JdbcLockDialect dialect;
		if (product.contains("postgresql")) {
			dialect = new PostgreSqlDialect(table, networkTimeouts ? 0 : queryTimeoutSeconds,
					PostgresReleaseListener.channelOf(connection, table), claimWindowMicros, instance);
		}
		else if (product.contains("mariadb")) {
			dialect = new MySqlDialect(table, queryTimeoutSeconds, "mariadb");
		}
		else {
			return otherDialect(table, queryTimeoutSeconds, product);
		}
		dialect.boundsIdleTransactions = boundsIdleTransactions(product, metaData.getDatabaseMajorVersion(),
				metaData.getDatabaseMinorVersion());
		return dialect;
	}

	private static JdbcLockDialect otherDialect(String table, int queryTimeoutSeconds, String product) {
		if (product.contains("mysql")) {
			return new MySqlDialect(table, queryTimeoutSeconds, "mysql");
		}
		if (product.equals("h2")) {
			return new H2Dialect(table, queryTimeoutSeconds);
		}
		return new GenericSqlDialect(table, queryTimeoutSeconds, product);
	}

	/**
	 * Groups locks by time to live, so that each group is renewed by one statement with one
	 * expiry expression (callers use one or a few distinct TTLs), in chunks of at most
	 * {@link #RENEW_CHUNK}.
	 */
	static List<List<HeldLock>> byTtl(Collection<HeldLock> locks) {
		Map<Long, List<HeldLock>> groups = new LinkedHashMap<>();
		for (HeldLock lock : locks) {
			groups.computeIfAbsent(lock.ttl().toMillis(), (ttl) -> new ArrayList<>()).add(lock);
		}
		List<List<HeldLock>> chunks = new ArrayList<>();
		for (List<HeldLock> group : groups.values()) {
			for (int from = 0; from < group.size(); from += RENEW_CHUNK) {
				chunks.add(group.subList(from, Math.min(group.size(), from + RENEW_CHUNK)));
			}
		}
		return chunks;
	}

	/**
	 * Reads the row after an acquisition attempt: acquired if it names {@code owner}, else held
	 * with the holder's remaining time. The query selects owner, fence and remaining
	 * microseconds, with {@code params} bound in order.
	 */
	protected AcquireResult readOwner(Connection connection, String sql, String owner, Object... params)
			throws SQLException {
		try (PreparedStatement ps = prepare(connection, sql)) {
			for (int i = 0; i < params.length; i++) {
				ps.setObject(i + 1, params[i]);
			}
			try (ResultSet rs = ps.executeQuery()) {
				if (!rs.next()) {
					// deleted since the attempt (by an operator): not ours, and nothing to wait for
					return AcquireResult.held(0);
				}
				if (owner.equals(rs.getString(1))) {
					return AcquireResult.acquired(rs.getLong(2));
				}
				return AcquireResult.held(remainingMillis(rs.getLong(3)));
			}
		}
	}

	/**
	 * Renews with one {@code UPDATE} per distinct TTL over a list of (key, owner) pairs, then one
	 * {@code SELECT} that reports the keys our owners hold unexpired: exactly the renewed ones,
	 * since a lock that had expired is neither renewed nor reported.
	 */
	protected Set<String> renewByList(Connection connection, Collection<HeldLock> locks, String now)
			throws SQLException {
		Set<String> renewed = new HashSet<>();
		for (List<HeldLock> chunk : byTtl(locks)) {
			long ttlMicros = chunk.get(0).ttl().toMillis() * 1000;
			String pairs = pairs(chunk.size());
			try (PreparedStatement ps = prepare(connection, "UPDATE " + this.table + " SET expires_at = " + now
					+ " + ? WHERE (lock_key, owner_token) IN (" + pairs + ") AND expires_at > " + now)) {
				ps.setLong(1, ttlMicros);
				bindPairs(ps, 2, chunk);
				ps.executeUpdate();
			}
			try (PreparedStatement ps = prepare(connection, "SELECT lock_key FROM " + this.table
					+ " WHERE (lock_key, owner_token) IN (" + pairs + ") AND expires_at > " + now)) {
				bindPairs(ps, 1, chunk);
				try (ResultSet rs = ps.executeQuery()) {
					while (rs.next()) {
						renewed.add(rs.getString(1));
					}
				}
			}
		}
		return renewed;
	}

	private static String pairs(int count) {
		StringBuilder sql = new StringBuilder();
		for (int i = 0; i < count; i++) {
			sql.append((i > 0) ? ", (?, ?)" : "(?, ?)");
		}
		return sql.toString();
	}

	private static void bindPairs(PreparedStatement ps, int first, List<HeldLock> locks) throws SQLException {
		int index = first;
		for (HeldLock lock : locks) {
			ps.setString(index++, lock.key());
			ps.setString(index++, lock.owner());
		}
	}

	/**
	 * Whether an {@code INSERT} of a lock row failed on the primary key: every column is given a
	 * non-null value, so an integrity violation there can only be the key.
	 */
	static boolean isDuplicateKey(SQLException ex) {
		String state = ex.getSQLState();
		return ex instanceof SQLIntegrityConstraintViolationException || "23505".equals(state) || "23000".equals(state);
	}

}
