package dev.holdfast.jdbc;

import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.jspecify.annotations.Nullable;

import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.KeySetAcquisition.FirstTaken;

/**
 * Several locks in one PostgreSQL statement: all or none (MKY-6), or the first free one (SEM-7).
 * <p>
 * All or none: the upsert of a single acquisition over arrays, each row taken by its rules (JDB-2:
 * absent, expired, released, or reserved for this instance; JDB-3: the token
 * {@code GREATEST(fence + 1, clock)} under the row's lock), in the order of the keys' bytes
 * (collation "C"), the order in which renewal locks its rows too, so that no two statements lock
 * shared rows in opposite orders (the sweep never waits). A row not taken makes the statement fail
 * as a whole, so that it takes none: the rows taken are counted, and a count short of the locks
 * divides by zero (SQLState 22012), which rolls the statement back (autocommit). No row taken is no
 * failure: nothing to roll back. A refused row is not marked: the statement records no waiter.
 * <p>
 * The first free: the rows are read without a lock, the first key (in the order given) whose row
 * is absent or meets the single acquisition's own condition is chosen (the condition's text is the
 * {@code ON CONFLICT} clause's, its {@code EXCLUDED.acquired_at} the statement's clock), and the
 * single acquisition's upsert takes it. So the statement locks one row at most, one it read free,
 * and waits for no row while it holds another (no lock-order cycle); a row taken since it was read
 * is refused by the upsert's condition, under the row's lock: the statement answers the key it
 * chose with no token, and runs again on the keys after it (autocommit: no row held between runs).
 * <p>
 * The other statements over several rows, renewal and the sweep, are here too, so that the lock
 * order of MKY-6 reads in one place.
 */
final class PostgresKeySets {

	/** What the statement raises when it took some rows but not all. */
	private static final String NOT_ALL_TAKEN = "22012";

	private final String sql;

	private final String firstSql;

	private final String reserved;

	private final String renewSql;

	private final String sweepSql;

	/**
	 * @param table the lock table
	 * @param insert the {@code INSERT INTO <table> AS l (columns)} of a single acquisition
	 * @param now the one-row relation of the database clock, column {@code us}
	 * @param takeRow the single acquisition's {@code ON CONFLICT} clause, whose one parameter is
	 * {@code reserved}, ending in the condition {@code WHERE <on l and EXCLUDED.acquired_at>}
	 * @param reserved what a row reserved for this instance begins with
	 */
	PostgresKeySets(String table, String insert, String now, String takeRow, String reserved) {
		this.reserved = reserved;
		this.sql = "WITH t AS (" + insert + " SELECT v.k, v.o, n.us, n.us + v.ttl, n.us, ? FROM " + now
				+ " n, unnest(?::varchar[], ?::varchar[], ?::bigint[]) AS v(k, o, ttl)"
				+ " ORDER BY v.k COLLATE \"C\"" + takeRow + " RETURNING l.lock_key, l.fence)"
				+ " SELECT t.lock_key, t.fence / (SELECT CASE WHEN count(*) = ? THEN 1 ELSE 0 END FROM t) FROM t";
		int where = takeRow.lastIndexOf(" WHERE ");
		if (where < 0 || !takeRow.contains("EXCLUDED.acquired_at")) {
			throw new IllegalArgumentException("No condition on EXCLUDED.acquired_at ends the clause: " + takeRow);
		}
		String takeable = takeRow.substring(where + " WHERE ".length());
		// Parameters in the order of the statement above: holder, keys, owners, ttls, reserved (twice).
		this.firstSql = "WITH n AS " + now + ", c AS (SELECT v.k, v.o, v.ttl, ?::varchar AS h"
				+ " FROM unnest(?::varchar[], ?::varchar[], ?::bigint[]) WITH ORDINALITY AS v(k, o, ttl, i)"
				+ " CROSS JOIN (SELECT us AS acquired_at FROM n) AS excluded LEFT JOIN " + table
				+ " l ON l.lock_key = v.k WHERE l.lock_key IS NULL OR (" + takeable + ") ORDER BY v.i LIMIT 1), u AS ("
				+ insert + " SELECT c.k, c.o, n.us, n.us + c.ttl, n.us, c.h FROM n, c" + takeRow
				+ " RETURNING l.lock_key, l.fence) SELECT c.k, u.fence FROM c LEFT JOIN u ON u.lock_key = c.k";
		// The rows are locked first in the order of their keys' bytes (s), as the several-key statement
		// locks them (MKY-6): the update touches only rows s locked, so no lock-order cycle. s carries
		// owner and time to live, so that a generic plan does not join the arrays twice.
		this.renewSql = "WITH n AS " + now + ", s AS (SELECT l.lock_key, v.o, v.ttl FROM " + table + " l JOIN"
				+ " unnest(?::varchar[], ?::varchar[], ?::bigint[]) AS v(k, o, ttl) ON l.lock_key = v.k AND l.owner_token = v.o"
				+ " ORDER BY l.lock_key COLLATE \"C\" FOR NO KEY UPDATE OF l) UPDATE " + table
				+ " AS l SET expires_at = n.us + s.ttl FROM n, s WHERE l.lock_key = s.lock_key AND l.owner_token = s.o"
				+ " AND l.expires_at > n.us RETURNING l.lock_key";
		// Rows another statement has locked are skipped, never waited for: the sweep is in no cycle.
		// The candidates are locked once (an InitPlan), then deleted by primary key.
		this.sweepSql = "DELETE FROM " + table + " WHERE lock_key = ANY(ARRAY(SELECT lock_key FROM " + table
				+ " WHERE expires_at < ? AND fence < ? LIMIT ? FOR UPDATE SKIP LOCKED)) AND expires_at < ? AND fence < ?";
	}

	/**
	 * Runs {@code statement} on the keys' PostgreSQL database, as {@code connections} runs any
	 * statement of the backend; {@code action} begins its name in a failure
	 * ({@code <action> <n> locks from <key>}).
	 * @throws UnsupportedOperationException when the database is not PostgreSQL
	 */
	static <T> T execute(JdbcConnections connections, String action, List<HeldLock> locks, Statement<T> statement) {
		locks.forEach((lock) -> JdbcKeys.checkLockKey(lock.key()));
		return connections.execute(action + " " + locks.size() + " locks from", locks.get(0).key(), (dialect, connection) -> {
			if (!(dialect instanceof PostgreSqlDialect postgres)) {
				throw new UnsupportedOperationException("Locks are taken at once on PostgreSQL only, not with "
						+ dialect.getClass().getSimpleName() + ": ask acquiresKeySets() first");
			}
			return statement.run(postgres.keySets, dialect, connection, locks, connections.holder());
		});
	}

	/**
	 * The fencing token of each lock in the order of {@code locks}, or {@code null} when one was
	 * held and none was taken.
	 */
	long @Nullable [] acquireAll(JdbcLockDialect dialect, Connection connection, List<HeldLock> locks,
			String holder) throws SQLException {
		Map<String, Long> tokens = run(dialect, connection, this.sql, locks, holder, locks.size());
		if (tokens == null || tokens.isEmpty()) {
			return null;
		}
		long[] answer = new long[locks.size()];
		for (int i = 0; i < answer.length; i++) {
			answer[i] = tokens.get(locks.get(i).key());
		}
		return answer;
	}

	/** The first free of {@code locks} taken, in their order, or {@code null} when none was. */
	@Nullable FirstTaken acquireFirst(JdbcLockDialect dialect, Connection connection, List<HeldLock> locks,
			String holder) throws SQLException {
		int from = 0;
		while (from < locks.size()) {
			List<HeldLock> rest = locks.subList(from, locks.size());
			Map<String, Long> chosen = run(dialect, connection, this.firstSql, rest, holder, this.reserved);
			if (chosen == null || chosen.isEmpty()) {
				return null;
			}
			int i = 0;
			while (!chosen.containsKey(rest.get(i).key())) {
				i++;
			}
			Long token = chosen.get(rest.get(i).key());
			if (token != null) {
				return new FirstTaken(from + i, token);
			}
			// taken since the statement read it free: the keys after it, as a try of each would go on
			from += i + 1;
		}
		return null;
	}

	/**
	 * Runs {@code sql} with the holder, the locks' keys, owners and ttls, {@link #reserved} and
	 * {@code last}: the rows taken (a key chosen but refused has no token), or {@code null} when the
	 * statement took some but not all.
	 */
	private @Nullable Map<String, Long> run(JdbcLockDialect dialect, Connection connection, String sql,
			List<HeldLock> locks, String holder, Object last) throws SQLException {
		String[] keys = new String[locks.size()];
		String[] owners = new String[locks.size()];
		Long[] ttls = new Long[locks.size()];
		for (int i = 0; i < keys.length; i++) {
			keys[i] = locks.get(i).key();
			owners[i] = locks.get(i).owner();
			ttls[i] = Math.multiplyExact(locks.get(i).ttl().toMillis(), 1000);
		}
		Array keyArray = connection.createArrayOf("varchar", keys);
		Array ownerArray = connection.createArrayOf("varchar", owners);
		Array ttlArray = connection.createArrayOf("bigint", ttls);
		Map<String, Long> tokens = new HashMap<>();
		try (PreparedStatement ps = dialect.prepare(connection, sql)) {
			ps.setString(1, holder);
			ps.setArray(2, keyArray);
			ps.setArray(3, ownerArray);
			ps.setArray(4, ttlArray);
			ps.setString(5, this.reserved);
			ps.setObject(6, last);
			try (ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					String key = rs.getString(1);
					long token = rs.getLong(2);
					tokens.put(key, rs.wasNull() ? null : token);
				}
			}
		}
		catch (SQLException ex) {
			if (NOT_ALL_TAKEN.equals(ex.getSQLState())) {
				return null;
			}
			throw ex;
		}
		finally {
			keyArray.free();
			ownerArray.free();
			ttlArray.free();
		}
		return tokens;
	}

	/** {@link JdbcLockDialect#renew} on PostgreSQL: the locks of each chunk in one statement, over arrays. */
	Set<String> renew(JdbcLockDialect dialect, Connection connection, Collection<HeldLock> locks) throws SQLException {
		Set<String> renewed = new HashSet<>();
		List<HeldLock> all = new ArrayList<>(locks);
		for (int from = 0; from < all.size(); from += JdbcLockDialect.RENEW_CHUNK) {
			List<HeldLock> chunk = all.subList(from, Math.min(all.size(), from + JdbcLockDialect.RENEW_CHUNK));
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
			try (PreparedStatement ps = dialect.prepare(connection, this.renewSql)) {
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

	/** {@link JdbcLockDialect#sweep} on PostgreSQL; {@code cut} is the database clock less the sweep delay. */
	int sweep(JdbcLockDialect dialect, Connection connection, long cut, int limit) throws SQLException {
		return dialect.update(connection, this.sweepSql, cut, cut, limit, cut, cut);
	}

	/** {@link #acquireAll} or {@link #acquireFirst}. */
	interface Statement<T> {

		T run(PostgresKeySets keySets, JdbcLockDialect dialect, Connection connection, List<HeldLock> locks,
				String holder) throws SQLException;

	}

}
