package dev.holdfast.jdbc;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLIntegrityConstraintViolationException;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;

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

	/** The database's current time in microseconds since the Unix epoch. */
	abstract long clock(Connection connection) throws SQLException;

	/**
	 * Records {@code tickMicros} in the tick record {@code key} if the record is absent, has
	 * expired on the database clock, or holds an earlier tick, and then lets it expire
	 * {@code ttlMicros} from now on the database clock; in one atomic step, so that of claims of
	 * one tick at most one succeeds. The record is a row whose {@code fence} holds the last
	 * claimed tick and whose owner is empty, so that no release or renewal matches it.
	 * @return whether this call claimed the tick
	 */
	abstract boolean claimTick(Connection connection, String key, long tickMicros, long ttlMicros, String holder)
			throws SQLException;

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

	void checkTable(Connection connection) throws SQLException {
		try (PreparedStatement ps = prepare(connection, "SELECT lock_key, owner_token, fence, expires_at, acquired_at, holder FROM "
				+ this.table + " WHERE 1 = 0")) {
			ps.executeQuery().close();
		}
	}

	protected PreparedStatement prepare(Connection connection, String sql) throws SQLException {
		PreparedStatement ps = connection.prepareStatement(sql);
		ps.setQueryTimeout(this.queryTimeoutSeconds);
		return ps;
	}

	static long remainingMillis(long remainingMicros) {
		return Math.max(0, (remainingMicros + 999) / 1000);
	}

	/** Picks the dialect for the database behind {@code connection}. */
	static JdbcLockDialect detect(Connection connection, String table, int queryTimeoutSeconds) throws SQLException {
		String product = connection.getMetaData().getDatabaseProductName().toLowerCase(Locale.ROOT);
		if (product.contains("postgresql")) {
			return new PostgreSql(table, queryTimeoutSeconds);
		}
		if (product.contains("mariadb")) {
			return new MySql(table, queryTimeoutSeconds, "mariadb");
		}
		if (product.contains("mysql")) {
			return new MySql(table, queryTimeoutSeconds, "mysql");
		}
		if (product.equals("h2")) {
			return new H2(table, queryTimeoutSeconds);
		}
		return new Generic(table, queryTimeoutSeconds, product);
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
	 * A database whose clock SQL can read as microseconds since the Unix epoch, so that a release
	 * is one statement.
	 */
	abstract static class SqlClock extends JdbcLockDialect {

		private final String now;

		private final String releaseSql;

		/** {@code now}: an SQL expression of the database clock in microseconds since the epoch. */
		SqlClock(String table, int queryTimeoutSeconds, String now) {
			super(table, queryTimeoutSeconds);
			this.now = now;
			this.releaseSql = "UPDATE " + table + " SET owner_token = '', expires_at = LEAST(expires_at, " + now
					+ ") WHERE lock_key = ? AND owner_token = ?";
		}

		@Override
		boolean release(Connection connection, String key, String owner) throws SQLException {
			return update(connection, this.releaseSql, key, owner) > 0;
		}

		@Override
		long clock(Connection connection) throws SQLException {
			try (PreparedStatement ps = prepare(connection, "SELECT " + this.now); ResultSet rs = ps.executeQuery()) {
				rs.next();
				return rs.getLong(1);
			}
		}

	}

	/**
	 * PostgreSQL: acquisition, fencing token and the holder's remaining time in one statement;
	 * renewal of any number of locks in one statement over arrays.
	 */
	static final class PostgreSql extends SqlClock {

		private static final String NOW = "(SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint AS us)";

		private final String acquireSql;

		private final String renewSql;

		private final String claimSql;

		PostgreSql(String table, int queryTimeoutSeconds) {
			super(table, queryTimeoutSeconds, NOW);
			// A CTE with a volatile function is evaluated once: one "now" for the whole statement.
			// The final SELECT reads the snapshot taken before the INSERT, i.e. the holder's row
			// when the lock was held.
			this.acquireSql = "WITH n AS " + NOW + ", a AS (INSERT INTO " + table
					+ " AS l (lock_key, owner_token, fence, expires_at, acquired_at, holder)"
					+ " SELECT ?, ?, n.us, n.us + ?, n.us, ? FROM n ON CONFLICT (lock_key) DO UPDATE SET"
					+ " owner_token = EXCLUDED.owner_token, fence = GREATEST(l.fence + 1, EXCLUDED.fence),"
					+ " expires_at = EXCLUDED.expires_at, acquired_at = EXCLUDED.acquired_at, holder = EXCLUDED.holder"
					+ " WHERE l.expires_at <= EXCLUDED.acquired_at RETURNING l.fence)"
					+ " SELECT (SELECT fence FROM a), (SELECT h.expires_at - n.us FROM " + table
					+ " h WHERE h.lock_key = ?) FROM n";
			this.renewSql = "WITH n AS " + NOW + " UPDATE " + table + " AS l SET expires_at = n.us + v.ttl"
					+ " FROM n, unnest(?::varchar[], ?::varchar[], ?::bigint[]) AS v(k, o, ttl)"
					+ " WHERE l.lock_key = v.k AND l.owner_token = v.o AND l.expires_at > n.us RETURNING l.lock_key";
			// The conflict condition sees the latest committed record, under its row lock.
			this.claimSql = "WITH n AS " + NOW + " INSERT INTO " + table
					+ " AS l (lock_key, owner_token, fence, expires_at, acquired_at, holder)"
					+ " SELECT ?, '', ?, n.us + ?, n.us, ? FROM n ON CONFLICT (lock_key) DO UPDATE SET"
					+ " fence = EXCLUDED.fence, expires_at = EXCLUDED.expires_at, acquired_at = EXCLUDED.acquired_at,"
					+ " holder = EXCLUDED.holder WHERE l.fence < EXCLUDED.fence OR l.expires_at <= EXCLUDED.acquired_at";
		}

		@Override
		boolean claimTick(Connection connection, String key, long tickMicros, long ttlMicros, String holder)
				throws SQLException {
			return update(connection, this.claimSql, key, tickMicros, ttlMicros, holder) > 0;
		}

		@Override
		String platform() {
			return "postgresql";
		}

		@Override
		AcquireResult acquire(Connection connection, String key, String owner, long ttlMicros, String holder)
				throws SQLException {
			try (PreparedStatement ps = prepare(connection, this.acquireSql)) {
				ps.setString(1, key);
				ps.setString(2, owner);
				ps.setLong(3, ttlMicros);
				ps.setString(4, holder);
				ps.setString(5, key);
				try (ResultSet rs = ps.executeQuery()) {
					rs.next();
					long fence = rs.getLong(1);
					if (!rs.wasNull()) {
						return AcquireResult.acquired(fence);
					}
					long remaining = rs.getLong(2);
					return AcquireResult.held(rs.wasNull() ? -1 : remainingMillis(remaining));
				}
			}
		}

		@Override
		Set<String> renew(Connection connection, Collection<HeldLock> locks) throws SQLException {
			Set<String> renewed = new HashSet<>();
			List<HeldLock> all = new ArrayList<>(locks);
			for (int from = 0; from < all.size(); from += RENEW_CHUNK) {
				List<HeldLock> chunk = all.subList(from, Math.min(all.size(), from + RENEW_CHUNK));
				String[] keys = new String[chunk.size()];
				String[] owners = new String[chunk.size()];
				Long[] ttls = new Long[chunk.size()];
				for (int i = 0; i < chunk.size(); i++) {
					keys[i] = chunk.get(i).key();
					owners[i] = chunk.get(i).owner();
					ttls[i] = chunk.get(i).ttl().toMillis() * 1000;
				}
				Array keyArray = connection.createArrayOf("varchar", keys);
				Array ownerArray = connection.createArrayOf("varchar", owners);
				Array ttlArray = connection.createArrayOf("bigint", ttls);
				try (PreparedStatement ps = prepare(connection, this.renewSql)) {
					ps.setArray(1, keyArray);
					ps.setArray(2, ownerArray);
					ps.setArray(3, ttlArray);
					try (ResultSet rs = ps.executeQuery()) {
						while (rs.next()) {
							renewed.add(rs.getString(1));
						}
					}
				}
				finally {
					keyArray.free();
					ownerArray.free();
					ttlArray.free();
				}
			}
			return renewed;
		}

	}

	/**
	 * MySQL and MariaDB: an {@code INSERT ... ON DUPLICATE KEY UPDATE} takes the row only if it
	 * is absent or expired; neither database returns the row of an upsert, so a second
	 * autocommit statement reads owner, fencing token and remaining time. Reading after the
	 * upsert is sound: if the row names our owner token, the upsert made it ours and the token
	 * is ours (owner tokens are unique per acquisition).
	 */
	static final class MySql extends SqlClock {

		/** UTC_TIMESTAMP does not depend on the session time zone, and TIMESTAMPDIFF is arithmetic. */
		private static final String NOW = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";

		private static final String TAKEN = "expires_at <= VALUES(acquired_at)";

		private final String platform;

		private final String acquireSql;

		private final String readSql;

		private final String claimUpdateSql;

		private final String claimInsertSql;

		MySql(String table, int queryTimeoutSeconds, String platform) {
			super(table, queryTimeoutSeconds, NOW);
			this.platform = platform;
			// Assignments run left to right and later ones see earlier results: expires_at,
			// which the condition reads, is assigned last.
			this.acquireSql = "INSERT INTO " + table + " (lock_key, owner_token, fence, expires_at, acquired_at, holder)"
					+ " VALUES (?, ?, " + NOW + ", " + NOW + " + ?, " + NOW + ", ?) ON DUPLICATE KEY UPDATE"
					+ " fence = IF(" + TAKEN + ", GREATEST(fence + 1, VALUES(fence)), fence),"
					+ " owner_token = IF(" + TAKEN + ", VALUES(owner_token), owner_token),"
					+ " holder = IF(" + TAKEN + ", VALUES(holder), holder),"
					+ " acquired_at = IF(" + TAKEN + ", VALUES(acquired_at), acquired_at),"
					+ " expires_at = IF(" + TAKEN + ", VALUES(expires_at), expires_at)";
			this.readSql = "SELECT owner_token, fence, expires_at - " + NOW + " FROM " + table + " WHERE lock_key = ?";
			// Not an upsert: its affected-row count cannot tell an unchanged row from an inserted
			// one when the driver reports found rows (the default of both drivers).
			this.claimUpdateSql = "UPDATE " + table + " SET fence = ?, expires_at = " + NOW + " + ?, acquired_at = "
					+ NOW + ", holder = ? WHERE lock_key = ? AND (fence < ? OR expires_at <= " + NOW + ")";
			this.claimInsertSql = "INSERT INTO " + table
					+ " (lock_key, owner_token, fence, expires_at, acquired_at, holder) VALUES (?, '', ?, " + NOW
					+ " + ?, " + NOW + ", ?)";
		}

		@Override
		boolean claimTick(Connection connection, String key, long tickMicros, long ttlMicros, String holder)
				throws SQLException {
			return updateElseInsert(connection, this.claimUpdateSql,
					new Object[] { tickMicros, ttlMicros, holder, key, tickMicros }, this.claimInsertSql,
					new Object[] { key, tickMicros, ttlMicros, holder });
		}

		@Override
		String platform() {
			return this.platform;
		}

		@Override
		AcquireResult acquire(Connection connection, String key, String owner, long ttlMicros, String holder)
				throws SQLException {
			try (PreparedStatement ps = prepare(connection, this.acquireSql)) {
				ps.setString(1, key);
				ps.setString(2, owner);
				ps.setLong(3, ttlMicros);
				ps.setString(4, holder);
				ps.executeUpdate();
			}
			return readOwner(connection, this.readSql, owner, key);
		}

		@Override
		Set<String> renew(Connection connection, Collection<HeldLock> locks) throws SQLException {
			return renewByList(connection, locks, NOW);
		}

	}

	/**
	 * H2: a standard {@code MERGE ... USING} takes the row only if absent or expired and returns
	 * the fencing token through a {@code FINAL TABLE}; two racers on an absent key meet on the
	 * primary key, and the loser sees the lock held.
	 */
	static final class H2 extends SqlClock {

		private static final String NOW = "CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000000 AS BIGINT)";

		private final String acquireSql;

		private final String remainingSql;

		private final String claimSql;

		H2(String table, int queryTimeoutSeconds) {
			super(table, queryTimeoutSeconds, NOW);
			this.acquireSql = "SELECT fence FROM FINAL TABLE (MERGE INTO " + table + " l USING (SELECT"
					+ " CAST(? AS VARCHAR(255)) k, CAST(? AS VARCHAR(255)) o, " + NOW + " us, CAST(? AS BIGINT) ttl,"
					+ " CAST(? AS VARCHAR(255)) h) s ON l.lock_key = s.k"
					+ " WHEN MATCHED AND l.expires_at <= s.us THEN UPDATE SET owner_token = s.o,"
					+ " fence = GREATEST(l.fence + 1, s.us), expires_at = s.us + s.ttl, acquired_at = s.us, holder = s.h"
					+ " WHEN NOT MATCHED THEN INSERT (lock_key, owner_token, fence, expires_at, acquired_at, holder)"
					+ " VALUES (s.k, s.o, s.us, s.us + s.ttl, s.us, s.h))";
			this.remainingSql = "SELECT expires_at - " + NOW + " FROM " + table + " WHERE lock_key = ?";
			this.claimSql = "MERGE INTO " + table + " l USING (SELECT CAST(? AS VARCHAR(255)) k, CAST(? AS BIGINT) t, "
					+ NOW + " us, CAST(? AS BIGINT) ttl, CAST(? AS VARCHAR(255)) h) s ON l.lock_key = s.k"
					+ " WHEN MATCHED AND (l.fence < s.t OR l.expires_at <= s.us) THEN UPDATE SET fence = s.t,"
					+ " expires_at = s.us + s.ttl, acquired_at = s.us, holder = s.h"
					+ " WHEN NOT MATCHED THEN INSERT (lock_key, owner_token, fence, expires_at, acquired_at, holder)"
					+ " VALUES (s.k, '', s.t, s.us + s.ttl, s.us, s.h)";
		}

		/** Two claims that both find no record meet on the primary key; the second one loses. */
		@Override
		boolean claimTick(Connection connection, String key, long tickMicros, long ttlMicros, String holder)
				throws SQLException {
			return updateUnlessDuplicate(connection, this.claimSql, key, tickMicros, ttlMicros, holder) > 0;
		}

		@Override
		String platform() {
			return "h2";
		}

		@Override
		AcquireResult acquire(Connection connection, String key, String owner, long ttlMicros, String holder)
				throws SQLException {
			try (PreparedStatement ps = prepare(connection, this.acquireSql)) {
				ps.setString(1, key);
				ps.setString(2, owner);
				ps.setLong(3, ttlMicros);
				ps.setString(4, holder);
				try (ResultSet rs = ps.executeQuery()) {
					if (rs.next()) {
						return AcquireResult.acquired(rs.getLong(1));
					}
				}
			}
			catch (SQLException ex) {
				if (!isDuplicateKey(ex)) {
					throw ex;
				}
				return AcquireResult.held(-1);
			}
			try (PreparedStatement ps = prepare(connection, this.remainingSql)) {
				ps.setString(1, key);
				try (ResultSet rs = ps.executeQuery()) {
					return AcquireResult.held(rs.next() ? remainingMillis(rs.getLong(1)) : -1);
				}
			}
		}

		@Override
		Set<String> renew(Connection connection, Collection<HeldLock> locks) throws SQLException {
			return renewByList(connection, locks, NOW);
		}

	}

	/**
	 * Any other database: standard SQL only, several autocommit statements. The database's
	 * clock is read with {@code SELECT CURRENT_TIMESTAMP}; the row is taken over by an
	 * {@code UPDATE} conditional on expiry, or created by an {@code INSERT} that the primary key
	 * refuses to a second racer.
	 */
	static final class Generic extends JdbcLockDialect {

		private final String product;

		Generic(String table, int queryTimeoutSeconds, String product) {
			super(table, queryTimeoutSeconds);
			this.product = product;
		}

		@Override
		String platform() {
			return this.product;
		}

		@Override
		long clock(Connection connection) throws SQLException {
			try (PreparedStatement ps = prepare(connection, "SELECT CURRENT_TIMESTAMP");
					ResultSet rs = ps.executeQuery()) {
				rs.next();
				OffsetDateTime now = rs.getObject(1, OffsetDateTime.class);
				return ChronoUnit.MICROS.between(OffsetDateTime.parse("1970-01-01T00:00:00Z"), now);
			}
		}

		@Override
		AcquireResult acquire(Connection connection, String key, String owner, long ttlMicros, String holder)
				throws SQLException {
			long now = clock(connection);
			try (PreparedStatement ps = prepare(connection, "UPDATE " + this.table
					+ " SET owner_token = ?, fence = CASE WHEN fence + 1 > ? THEN fence + 1 ELSE ? END,"
					+ " expires_at = ?, acquired_at = ?, holder = ? WHERE lock_key = ? AND expires_at <= ?")) {
				ps.setString(1, owner);
				ps.setLong(2, now);
				ps.setLong(3, now);
				ps.setLong(4, now + ttlMicros);
				ps.setLong(5, now);
				ps.setString(6, holder);
				ps.setString(7, key);
				ps.setLong(8, now);
				if (ps.executeUpdate() == 0) {
					insert(connection, key, owner, now, ttlMicros, holder);
				}
			}
			return readOwner(connection, "SELECT owner_token, fence, expires_at - ? FROM " + this.table
					+ " WHERE lock_key = ?", owner, now, key);
		}

		@Override
		boolean release(Connection connection, String key, String owner) throws SQLException {
			long now = clock(connection);
			return update(connection, "UPDATE " + this.table + " SET owner_token = '',"
					+ " expires_at = CASE WHEN expires_at < ? THEN expires_at ELSE ? END"
					+ " WHERE lock_key = ? AND owner_token = ?", now, now, key, owner) > 0;
		}

		@Override
		boolean claimTick(Connection connection, String key, long tickMicros, long ttlMicros, String holder)
				throws SQLException {
			long now = clock(connection);
			return updateElseInsert(connection, "UPDATE " + this.table + " SET fence = ?, expires_at = ?,"
					+ " acquired_at = ?, holder = ? WHERE lock_key = ? AND (fence < ? OR expires_at <= ?)",
					new Object[] { tickMicros, now + ttlMicros, now, holder, key, tickMicros, now },
					"INSERT INTO " + this.table + " (lock_key, owner_token, fence, expires_at, acquired_at, holder)"
							+ " VALUES (?, '', ?, ?, ?, ?)",
					new Object[] { key, tickMicros, now + ttlMicros, now, holder });
		}

		private void insert(Connection connection, String key, String owner, long now, long ttlMicros, String holder)
				throws SQLException {
			try (PreparedStatement ps = prepare(connection, "INSERT INTO " + this.table
					+ " (lock_key, owner_token, fence, expires_at, acquired_at, holder) VALUES (?, ?, ?, ?, ?, ?)")) {
				ps.setString(1, key);
				ps.setString(2, owner);
				ps.setLong(3, now);
				ps.setLong(4, now + ttlMicros);
				ps.setLong(5, now);
				ps.setString(6, holder);
				ps.executeUpdate();
			}
			catch (SQLException ex) {
				if (!isDuplicateKey(ex)) {
					throw ex;
				}
				// another racer inserted first: the read below reports it as the holder
			}
		}

		@Override
		Set<String> renew(Connection connection, Collection<HeldLock> locks) throws SQLException {
			long now = clock(connection);
			Set<String> renewed = new HashSet<>();
			List<HeldLock> all = new ArrayList<>(locks);
			try (PreparedStatement ps = prepare(connection, "UPDATE " + this.table
					+ " SET expires_at = ? WHERE lock_key = ? AND owner_token = ? AND expires_at > ?")) {
				for (HeldLock lock : all) {
					ps.setLong(1, now + lock.ttl().toMillis() * 1000);
					ps.setString(2, lock.key());
					ps.setString(3, lock.owner());
					ps.setLong(4, now);
					ps.addBatch();
				}
				int[] counts = ps.executeBatch();
				for (int i = 0; i < counts.length; i++) {
					if (counts[i] > 0) {
						renewed.add(all.get(i).key());
					}
				}
			}
			return renewed;
		}

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
