package dev.holdfast.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.Collection;
import java.util.Set;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.TickClaims.TickClaim;

/**
 * MySQL and MariaDB: an {@code INSERT ... ON DUPLICATE KEY UPDATE} takes the row only if it
 * is absent or expired; neither database returns the row of an upsert, so a second
 * autocommit statement reads owner, fencing token and remaining time. Reading after the
 * upsert is sound: if the row names our owner token, the upsert made it ours and the token
 * is ours (owner tokens are unique per acquisition).
 */
final class MySqlDialect extends SqlClockDialect {

	/** UTC_TIMESTAMP does not depend on the session time zone, and TIMESTAMPDIFF is arithmetic. */
	private static final String NOW = "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";

	private static final String TAKEN = "expires_at <= VALUES(acquired_at)";

	private final String platform;

	private final String acquireSql;

	private final String readSql;

	private final String claimUpdateSql;

	private final String claimInsertSql;

	MySqlDialect(String table, int queryTimeoutSeconds, String platform) {
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
		// Both statements claim only a tick due by the database clock (UTC_TIMESTAMP is constant
		// within a statement).
		this.claimUpdateSql = "UPDATE " + table + " SET fence = ?, expires_at = " + NOW + " + ?, acquired_at = "
				+ NOW + ", holder = ? WHERE lock_key = ? AND (fence < ? OR expires_at <= " + NOW + ") AND ABS(" + NOW
				+ " - ?) <= ?";
		this.claimInsertSql = "INSERT INTO " + table
				+ " (lock_key, owner_token, fence, expires_at, acquired_at, holder) SELECT ?, '', ?, " + NOW
				+ " + ?, " + NOW + ", ? FROM DUAL WHERE ABS(" + NOW + " - ?) <= ?";
	}

	/** The database's time of the answer is read after the statements. */
	@Override
	TickClaim claimTick(Connection connection, String key, long tickMicros, long toleranceMicros, long ttlMicros,
			String holder) throws SQLException {
		boolean claimed = updateElseInsert(connection, this.claimUpdateSql,
				new Object[] { tickMicros, ttlMicros, holder, key, tickMicros, tickMicros, toleranceMicros },
				this.claimInsertSql, new Object[] { key, tickMicros, ttlMicros, holder, tickMicros, toleranceMicros });
		return claimed(connection, claimed, tickMicros, toleranceMicros);
	}

	@Override
	String platform() {
		return this.platform;
	}

	@Override
	AcquireResult acquire(Connection connection, String key, String owner, long ttlMicros, String holder)
			throws SQLException {
		try (PreparedStatement ps = prepareAcquire(connection, this.acquireSql, key, owner, ttlMicros, holder)) {
			ps.executeUpdate();
		}
		return readOwner(connection, this.readSql, owner, key);
	}

	/** The exclusive upsert's shape: an exclusive lock on the row, never a gap's (two first readers). */
	@Override
	void lockRecord(Connection connection, String key, String holder) throws SQLException {
		update(connection, "INSERT INTO " + this.table + " (lock_key, owner_token, fence, expires_at, acquired_at, holder)"
				+ " VALUES (?, '', " + NOW + ", " + NOW + ", " + NOW + ", ?) ON DUPLICATE KEY UPDATE fence = fence", key, holder);
	}

	@Override
	Set<String> renew(Connection connection, Collection<HeldLock> locks) throws SQLException {
		return renewByList(connection, locks, NOW);
	}

}
