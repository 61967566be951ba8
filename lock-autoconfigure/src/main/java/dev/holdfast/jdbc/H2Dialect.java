package dev.holdfast.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Collection;
import java.util.Set;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.TickClaims.TickClaim;

/**
 * H2: a standard {@code MERGE ... USING} takes the row only if absent or expired and returns
 * the fencing token through a {@code FINAL TABLE}; two racers on an absent key meet on the
 * primary key, and the loser sees the lock held.
 */
final class H2Dialect extends SqlClockDialect {

	private static final String NOW = "CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000000 AS BIGINT)";

	private final String acquireSql;

	private final String remainingSql;

	private final String claimSql;

	H2Dialect(String table, int queryTimeoutSeconds) {
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
				+ NOW + " us, CAST(? AS BIGINT) ttl, CAST(? AS VARCHAR(255)) h, CAST(? AS BIGINT) tol) s"
				+ " ON l.lock_key = s.k"
				+ " WHEN MATCHED AND ABS(s.us - s.t) <= s.tol AND (l.fence < s.t OR l.expires_at <= s.us)"
				+ " THEN UPDATE SET fence = s.t, expires_at = s.us + s.ttl, acquired_at = s.us, holder = s.h"
				+ " WHEN NOT MATCHED AND ABS(s.us - s.t) <= s.tol"
				+ " THEN INSERT (lock_key, owner_token, fence, expires_at, acquired_at, holder)"
				+ " VALUES (s.k, '', s.t, s.us + s.ttl, s.us, s.h)";
	}

	/**
	 * Two claims that both find no record meet on the primary key; the second one loses. The
	 * database's time of the answer is read after the statement.
	 */
	@Override
	TickClaim claimTick(Connection connection, String key, long tickMicros, long toleranceMicros, long ttlMicros,
			String holder) throws SQLException {
		boolean claimed = updateUnlessDuplicate(connection, this.claimSql, key, tickMicros, ttlMicros, holder,
				toleranceMicros) > 0;
		return claimed(connection, claimed, tickMicros, toleranceMicros);
	}

	@Override
	String platform() {
		return "h2";
	}

	@Override
	AcquireResult acquire(Connection connection, String key, String owner, long ttlMicros, String holder)
			throws SQLException {
		try (PreparedStatement ps = prepareAcquire(connection, this.acquireSql, key, owner, ttlMicros, holder)) {
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
