package dev.holdfast.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.OffsetDateTime;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.TickClaims.TickClaim;

/**
 * Any other database: standard SQL only, several autocommit statements. The database's
 * clock is read with {@code SELECT CURRENT_TIMESTAMP}; the row is taken over by an
 * {@code UPDATE} conditional on expiry, or created by an {@code INSERT} that the primary key
 * refuses to a second racer.
 */
final class GenericSqlDialect extends JdbcLockDialect {

	private final String product;

	GenericSqlDialect(String table, int queryTimeoutSeconds, String product) {
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
		if (update(connection, "UPDATE " + this.table + " SET owner_token = ?, fence = CASE WHEN fence + 1 > ? THEN"
				+ " fence + 1 ELSE ? END, expires_at = ?, acquired_at = ?, holder = ? WHERE lock_key = ? AND expires_at <= ?",
				owner, now, now, now + ttlMicros, now, holder, key, now) == 0) {
			// Another racer may insert first: the read below reports it as the holder.
			updateUnlessDuplicate(connection, "INSERT INTO " + this.table
					+ " (lock_key, owner_token, fence, expires_at, acquired_at, holder) VALUES (?, ?, ?, ?, ?, ?)", key,
					owner, now, now + ttlMicros, now, holder);
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

	/**
	 * Reads the database clock, and claims only a tick due by it: the portable SQL cannot judge
	 * the tick in the claim's own statement, so the judgement is one statement earlier.
	 */
	@Override
	TickClaim claimTick(Connection connection, String key, long tickMicros, long toleranceMicros, long ttlMicros,
			String holder) throws SQLException {
		long now = clock(connection);
		if (Math.abs(now - tickMicros) > toleranceMicros) {
			return answer(false, now, tickMicros, toleranceMicros);
		}
		boolean claimed = updateElseInsert(connection, "UPDATE " + this.table + " SET fence = ?, expires_at = ?,"
				+ " acquired_at = ?, holder = ? WHERE lock_key = ? AND (fence < ? OR expires_at <= ?)",
				new Object[] { tickMicros, now + ttlMicros, now, holder, key, tickMicros, now },
				"INSERT INTO " + this.table + " (lock_key, owner_token, fence, expires_at, acquired_at, holder)"
						+ " VALUES (?, '', ?, ?, ?, ?)",
				new Object[] { key, tickMicros, now + ttlMicros, now, holder });
		return answer(claimed, now, tickMicros, toleranceMicros);
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
