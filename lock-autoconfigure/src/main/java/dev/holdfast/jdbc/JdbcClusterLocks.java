package dev.holdfast.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;

import org.jspecify.annotations.Nullable;

import dev.holdfast.spi.ClusterLocks.BackendLock;
import dev.holdfast.spi.ClusterLocks.Listing;
import dev.holdfast.spi.InstanceNames;

/**
 * The locks of every instance, for operators (see {@link JdbcLockBackend#listLocks}): a query of
 * the live, owned rows under the prefix, limited; and the forced release, which expires a held
 * row in place as a release does; the tick in a job's record. Each reads the database clock first.
 */
final class JdbcClusterLocks {

	private JdbcClusterLocks() {
	}

	static Listing list(JdbcLockDialect dialect, Connection connection, String prefix, int max) throws SQLException {
		long now = dialect.clock(connection);
		// Tick records and reservations have no owner; LIMIT where the dialect is known to take it.
		String sql = "SELECT lock_key, owner_token, fence, expires_at FROM " + dialect.table
				+ " WHERE lock_key LIKE ? ESCAPE '!' AND owner_token <> '' AND expires_at > ? AND lock_key NOT LIKE ?"
				+ " ORDER BY lock_key"
				+ ((dialect instanceof GenericSqlDialect) ? "" : " LIMIT " + (max + 1));
		List<BackendLock> locks = new ArrayList<>();
		try (PreparedStatement statement = connection.prepareStatement(sql)) {
			statement.setQueryTimeout(dialect.queryTimeoutSeconds);
			statement.setMaxRows(max + 1);
			statement.setString(1, likeEscaped(prefix) + "%");
			statement.setLong(2, now);
			statement.setString(3, "{%"); // reader rows (RWL-36); tick records and stamps have no owner
			try (ResultSet rows = statement.executeQuery()) {
				while (rows.next()) {
					String owner = rows.getString(2);
					// a read-held record: its holder is named after the count below (RWL-38)
					locks.add(new BackendLock(rows.getString(1), JdbcSharedLocks.READERS.equals(owner) ? owner
							: InstanceNames.of(owner), rows.getLong(3), (rows.getLong(4) - now) / 1000));
				}
			}
		}
		for (int i = 0; i < Math.min(locks.size(), max); i++) {
			BackendLock lock = locks.get(i);
			if (JdbcSharedLocks.READERS.equals(lock.instance())) {
				long readers = JdbcSharedLocks.liveReaders(dialect, connection, lock.key(), lock.fencingToken(), now);
				locks.set(i, new BackendLock(lock.key(), InstanceNames.readers(readers), lock.fencingToken(),
						lock.remainingMillis()));
			}
		}
		boolean complete = locks.size() <= max;
		return new Listing(complete ? locks : locks.subList(0, max), complete);
	}

	static boolean forceRelease(JdbcLockDialect dialect, Connection connection, String key, @Nullable Long fencingToken)
			throws SQLException {
		long now = dialect.clock(connection);
		// As a release: the owner cleared, the row expired now, the fencing token kept.
		String sql = "UPDATE " + dialect.table + " SET owner_token = '', expires_at = ?"
				+ " WHERE lock_key = ? AND owner_token <> '' AND expires_at > ?"
				+ ((fencingToken != null) ? " AND fence = ?" : "");
		try (PreparedStatement statement = connection.prepareStatement(sql)) {
			statement.setQueryTimeout(dialect.queryTimeoutSeconds);
			statement.setLong(1, now);
			statement.setString(2, key);
			statement.setLong(3, now);
			if (fencingToken != null) {
				statement.setLong(4, fencingToken);
			}
			return statement.executeUpdate() == 1;
		}
	}

	static @Nullable Instant lastTick(JdbcLockDialect dialect, Connection connection, String record)
			throws SQLException {
		long now = dialect.clock(connection);
		String sql = "SELECT fence FROM " + dialect.table + " WHERE lock_key = ? AND owner_token = '' AND expires_at > ?";
		try (PreparedStatement statement = connection.prepareStatement(sql)) {
			statement.setQueryTimeout(dialect.queryTimeoutSeconds);
			statement.setString(1, record);
			statement.setLong(2, now);
			try (ResultSet rows = statement.executeQuery()) {
				return rows.next() ? Instant.EPOCH.plus(rows.getLong(1), ChronoUnit.MICROS) : null;
			}
		}
	}

	/** {@code prefix} with the characters {@code LIKE} reads as a pattern escaped by {@code !}. */
	static String likeEscaped(String prefix) {
		return prefix.replace("!", "!!").replace("%", "!%").replace("_", "!_");
	}

}
