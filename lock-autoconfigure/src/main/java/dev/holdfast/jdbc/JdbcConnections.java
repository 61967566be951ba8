package dev.holdfast.jdbc;

import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLTimeoutException;
import java.sql.SQLTransientConnectionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * How {@link JdbcLockBackend} treats the connections it borrows: network timeouts, isolation,
 * which failures are the connection's, and the holder description of this process.
 */
final class JdbcConnections {

	private JdbcConnections() {
	}

	/**
	 * Whether {@code ex} says the connection failed or timed out rather than that the statement
	 * was wrong: SQLState class 08, a timeout, or a connection that is now closed.
	 */
	static boolean isConnectionFailure(SQLException ex, Connection connection) throws SQLException {
		String state = ex.getSQLState();
		return ex instanceof SQLTimeoutException || ex instanceof SQLTransientConnectionException
				|| ex instanceof SQLNonTransientConnectionException || (state != null && state.startsWith("08"))
				|| connection.isClosed();
	}

	/** Whether the database aborted the statement as a serialization failure or a deadlock. */
	static boolean isSerializationFailure(SQLException ex) {
		return "40001".equals(ex.getSQLState()) || "40P01".equals(ex.getSQLState());
	}

	/**
	 * Pauses before attempt {@code attempt + 1} of work the database aborted: a random time up to
	 * {@code attempt} milliseconds, so that the racers that aborted each other do not meet again
	 * at once. Returns {@code false}, with the interrupt flag kept, when the pause was interrupted.
	 */
	static boolean pauseBeforeRetry(int attempt) {
		LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(TimeUnit.MILLISECONDS.toNanos(attempt)) + 1);
		return !Thread.currentThread().isInterrupted();
	}

	/** Sets the network timeout where the driver supports it; returns the previous one, or -1. */
	static int networkTimeout(Connection connection, int millis) throws SQLException {
		try {
			int previous = connection.getNetworkTimeout();
			if (previous != millis) {
				connection.setNetworkTimeout(Runnable::run, millis);
			}
			return previous;
		}
		catch (SQLFeatureNotSupportedException | UnsupportedOperationException | AbstractMethodError ex) {
			return -1;
		}
	}

	/**
	 * Whether lock statements must switch their connection to {@code READ COMMITTED}: when the
	 * pool hands out connections at a stricter level. Under {@code REPEATABLE READ} or
	 * {@code SERIALIZABLE}, PostgreSQL aborts a contended upsert with a serialization failure
	 * instead of waiting for the row. MySQL and MariaDB default to {@code REPEATABLE READ}, where
	 * InnoDB's writes read the latest committed row anyway: only {@code SERIALIZABLE}, which turns
	 * their plain reads into locking reads, is switched there, so that the default setup pays no
	 * extra round trips.
	 */
	static boolean switchesIsolation(JdbcLockDialect dialect, int poolIsolation) {
		if (dialect instanceof MySqlDialect) {
			return poolIsolation == Connection.TRANSACTION_SERIALIZABLE;
		}
		return poolIsolation == Connection.TRANSACTION_REPEATABLE_READ
				|| poolIsolation == Connection.TRANSACTION_SERIALIZABLE;
	}

	/** {@code pid <pid>@<host>}, or the runtime's name where the pid is not available. */
	static String describeProcess() {
		String host = System.getenv("HOSTNAME");
		if (host == null || host.isBlank()) {
			try {
				host = InetAddress.getLocalHost().getHostName();
			}
			catch (Exception ex) {
				host = "unknown-host";
			}
		}
		long pid;
		try {
			pid = ProcessHandle.current().pid();
		}
		catch (UnsupportedOperationException ex) {
			return ManagementFactory.getRuntimeMXBean().getName();
		}
		return "pid " + pid + "@" + host;
	}

}
