package dev.holdfast.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * A database whose clock SQL can read as microseconds since the Unix epoch, so that a release
 * is one statement.
 */
abstract class SqlClockDialect extends JdbcLockDialect {

	private final String now;

	private final String releaseSql;

	/** {@code now}: an SQL expression of the database clock in microseconds since the epoch. */
	SqlClockDialect(String table, int queryTimeoutSeconds, String now) {
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
	String clockSql() {
		return this.now;
	}

	@Override
	long clock(Connection connection) throws SQLException {
		try (PreparedStatement ps = prepare(connection, "SELECT " + this.now); ResultSet rs = ps.executeQuery()) {
			rs.next();
			return rs.getLong(1);
		}
	}

}
