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

/**
 * Several locks, all or none, in one PostgreSQL statement (MKY-6): the upsert of a single
 * acquisition over arrays, each row taken by its rules (JDB-2: absent, expired, released, or
 * reserved for this instance; JDB-3: the token {@code GREATEST(fence + 1, clock)} under the row's
 * lock), in the order of the keys' bytes (collation "C"), the order in which renewal locks its rows
 * too, so that no two statements lock shared rows in opposite orders (the sweep never waits). A
 * row not taken makes the statement fail as a whole, so that it takes none: the rows taken are
 * counted, and a count short of the locks divides by zero (SQLState 22012), which rolls the
 * statement back (autocommit). No row taken is no failure: nothing to roll back. A
 * refused row is not marked: the statement records no waiter. The other statements over several
 * rows, renewal and the sweep, are here too, so that the lock order of MKY-6 reads in one place.
 */
final class PostgresKeySets {

	/** What the statement raises when it took some rows but not all. */
	private static final String NOT_ALL_TAKEN = "22012";

	private final String sql;

	private final String reserved;

	private final String renewSql;

	private final String sweepSql;

	/**
	 * @param table the lock table
	 * @param insert the {@code INSERT INTO <table> AS l (columns)} of a single acquisition
	 * @param now the one-row relation of the database clock, column {@code us}
	 * @param takeRow the single acquisition's {@code ON CONFLICT} clause, whose one parameter is
	 * {@code reserved}
	 * @param reserved what a row reserved for this instance begins with
	 */
	PostgresKeySets(String table, String insert, String now, String takeRow, String reserved) {
		this.reserved = reserved;
		this.sql = "WITH t AS (" + insert + " SELECT v.k, v.o, n.us, n.us + v.ttl, n.us, ? FROM " + now
				+ " n, unnest(?::varchar[], ?::varchar[], ?::bigint[]) AS v(k, o, ttl)"
				+ " ORDER BY v.k COLLATE \"C\"" + takeRow + " RETURNING l.lock_key, l.fence)"
				+ " SELECT t.lock_key, t.fence / (SELECT CASE WHEN count(*) = ? THEN 1 ELSE 0 END FROM t) FROM t";
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
	 * The fencing token of each lock in the order of {@code locks}, or {@code null} when one was
	 * held and none was taken.
	 */
	long @Nullable [] acquireAll(JdbcLockDialect dialect, Connection connection, List<HeldLock> locks,
			String holder) throws SQLException {
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
		try (PreparedStatement ps = dialect.prepare(connection, this.sql)) {
			ps.setString(1, holder);
			ps.setArray(2, keyArray);
			ps.setArray(3, ownerArray);
			ps.setArray(4, ttlArray);
			ps.setString(5, this.reserved);
			ps.setInt(6, keys.length);
			try (ResultSet rs = ps.executeQuery()) {
				while (rs.next()) {
					tokens.put(rs.getString(1), rs.getLong(2));
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
		if (tokens.isEmpty()) {
			return null;
		}
		long[] answer = new long[keys.length];
		for (int i = 0; i < keys.length; i++) {
			answer[i] = tokens.get(keys[i]);
		}
		return answer;
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

}
