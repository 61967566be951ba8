package dev.holdfast.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLTimeoutException;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;

import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.InstanceNames;

/**
 * How {@link JdbcLockBackend} runs its statements: each on a connection of its own, borrowed from
 * the pool for it, in autocommit mode at {@code READ COMMITTED}, under a network timeout, in the
 * SQL of the database it detects on the first call; which failures are the connection's; and the
 * holder description of this process.
 */
final class JdbcConnections {

	/**
	 * How much later than the network timeout the statement timeout fires: it is the bound only
	 * with drivers that have no network timeout. Firing first, it would make some drivers (the
	 * PostgreSQL one) wait for a cancel request that a silent server never answers.
	 */
	private static final int STATEMENT_TIMEOUT_MARGIN_SECONDS = 2;

	/**
	 * How often work that the database aborts as a serialization failure or deadlock is tried in
	 * all: such an abort changed nothing, and under contention for one row it means "try again".
	 * H2 reports a deadlock between autocommit updates of one row now and then; three immediate
	 * attempts were seen to fail together with four contending threads.
	 */
	private static final int ABORTED_ATTEMPTS = 5;

	private static final int MAX_HOLDER_LENGTH = 255;

	private final DataSource dataSource;

	private final String tableName;

	private final String instance;

	private final int timeoutMillis;

	private final int queryTimeoutSeconds;

	private final String process = describeProcess();

	/** Per thread: its name, and the {@link #holder} description made of it. */
	private final ThreadLocal<String[]> holders = new ThreadLocal<>();

	private volatile @Nullable JdbcLockDialect dialect;

	/** Whether the pool's connections are stricter than READ COMMITTED; set with the dialect. */
	private volatile boolean switchIsolation;

	/** How long a release reserves the lock on PostgreSQL; set before the first statement, for tests. */
	private volatile long claimWindowMicros = PostgreSqlDialect.CLAIM_WINDOW_MICROS;

	/**
	 * @param dataSource the pool; a transaction-aware proxy is looked through, so that a
	 * transaction of the caller is never joined
	 * @param queryTimeout the longest a statement may wait for the database's answer (at most an
	 * hour); with a driver that has no network timeout, a statement timeout two seconds longer
	 * @param instance the backend instance, which PostgreSQL's fair handoff names
	 */
	JdbcConnections(DataSource dataSource, String tableName, Duration queryTimeout, String instance) {
		this.dataSource = (dataSource instanceof TransactionAwareDataSourceProxy proxy
				&& proxy.getTargetDataSource() != null) ? proxy.getTargetDataSource() : dataSource;
		this.tableName = tableName;
		this.instance = instance;
		this.timeoutMillis = (int) Math.min(3_600_000, Math.max(1, queryTimeout.toMillis()));
		this.queryTimeoutSeconds = (this.timeoutMillis + 999) / 1000 + STATEMENT_TIMEOUT_MARGIN_SECONDS;
	}

	/** The pool, never a transaction-aware proxy of it. */
	DataSource dataSource() {
		return this.dataSource;
	}

	/** The network timeout of every connection, in milliseconds. */
	int timeoutMillis() {
		return this.timeoutMillis;
	}

	int queryTimeoutSeconds() {
		return this.queryTimeoutSeconds;
	}

	/** The dialect in use, detected on the first call; {@code null} before it. */
	@Nullable JdbcLockDialect dialect() {
		return this.dialect;
	}

	/** Replaces the detected SQL dialect; for tests of the portable one. */
	void useDialect(JdbcLockDialect dialect) {
		this.dialect = dialect;
	}

	/** Replaces the claim window of a reservation on PostgreSQL; for tests, before the first statement. */
	void claimWindow(Duration window) {
		this.claimWindowMicros = TimeUnit.NANOSECONDS.toMicros(window.toNanos());
	}

	/**
	 * Runs {@code work} on a connection of its own in autocommit mode at {@code READ COMMITTED},
	 * with a network timeout so that a database that stops answering (paused, partitioned) fails
	 * the call instead of hanging it; the dialect is detected under the same timeout. Work that
	 * the database aborted as a serialization failure or deadlock ({@code 40001},
	 * {@code 40P01}) runs again after a jittered pause that grows with each attempt,
	 * {@value #ABORTED_ATTEMPTS} times in all: it changed nothing, and under contention for one row
	 * such an abort means "try again", not "the database is down". An interrupted pause ends the
	 * retries with that abort.
	 * @param key the lock the action concerns, or {@code null}: the description is only put
	 * together for a failure, not for every acquisition and release
	 * @throws LockBackendException if the database cannot be reached or reports an error
	 */
	<T> T execute(String action, @Nullable String key, SqlWork<T> work) {
		// Straight from the DataSource, never DataSourceUtils: a transaction of the caller must
		// not be joined.
		try (Connection connection = this.dataSource.getConnection()) {
			int networkTimeout = networkTimeout(connection, this.timeoutMillis);
			boolean autoCommit = connection.getAutoCommit();
			int isolation = -1;
			try {
				if (!autoCommit) {
					connection.setAutoCommit(true);
				}
				JdbcLockDialect dialect = dialect(connection, networkTimeout >= 0);
				if (this.switchIsolation) {
					isolation = connection.getTransactionIsolation();
					if (isolation != Connection.TRANSACTION_READ_COMMITTED) {
						connection.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
					}
				}
				for (int attempt = 1;; attempt++) {
					try {
						return work.run(dialect, connection);
					}
					catch (SQLException ex) {
						if (attempt == ABORTED_ATTEMPTS || !isSerializationFailure(ex) || !pauseBeforeRetry(attempt)) {
							throw ex;
						}
					}
				}
			}
			finally {
				if (!connection.isClosed()) {
					if (isolation >= 0 && isolation != Connection.TRANSACTION_READ_COMMITTED) {
						connection.setTransactionIsolation(isolation);
					}
					if (!autoCommit) {
						connection.setAutoCommit(false);
					}
					if (networkTimeout >= 0) {
						networkTimeout(connection, networkTimeout);
					}
				}
			}
		}
		catch (SQLException ex) {
			throw new LockBackendException("JDBC lock backend could not " + ((key != null) ? action + " '" + key + "'"
					: action) + " in table '" + this.tableName + "': " + ex.getMessage() + " (SQLState "
					+ ex.getSQLState() + ")", ex);
		}
	}

	/** Statements on a borrowed connection, in the dialect of its database. */
	@FunctionalInterface
	interface SqlWork<T> {

		T run(JdbcLockDialect dialect, Connection connection) throws SQLException;

	}

	private JdbcLockDialect dialect(Connection connection, boolean networkTimeouts) throws SQLException {
		JdbcLockDialect dialect = this.dialect;
		if (dialect == null) {
			// racing threads may both detect; they find the same answer
			dialect = JdbcLockDialect.detect(connection, this.tableName, this.queryTimeoutSeconds, networkTimeouts,
					this.claimWindowMicros, this.instance);
			this.switchIsolation = switchesIsolation(dialect, connection.getTransactionIsolation());
			this.dialect = dialect;
		}
		return dialect;
	}

	/**
	 * The holder description of the current thread: made again only when the thread's name
	 * changed, so that an acquisition puts no string together.
	 */
	String holder() {
		String name = Thread.currentThread().getName();
		String[] cached = this.holders.get();
		if (cached != null && cached[0] == name) {
			return cached[1];
		}
		String holder = this.process + " " + name;
		holder = (holder.length() <= MAX_HOLDER_LENGTH) ? holder : holder.substring(0, MAX_HOLDER_LENGTH);
		this.holders.set(new String[] { name, holder });
		return holder;
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
	private static boolean isSerializationFailure(SQLException ex) {
		return "40001".equals(ex.getSQLState()) || "40P01".equals(ex.getSQLState());
	}

	/**
	 * Pauses before attempt {@code attempt + 1} of work the database aborted: a random time up to
	 * {@code attempt} milliseconds, so that the racers that aborted each other do not meet again
	 * at once. Returns {@code false}, with the interrupt flag kept, when the pause was interrupted.
	 */
	private static boolean pauseBeforeRetry(int attempt) {
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
	private static boolean switchesIsolation(JdbcLockDialect dialect, int poolIsolation) {
		if (dialect instanceof MySqlDialect) {
			return poolIsolation == Connection.TRANSACTION_SERIALIZABLE;
		}
		return poolIsolation == Connection.TRANSACTION_REPEATABLE_READ
				|| poolIsolation == Connection.TRANSACTION_SERIALIZABLE;
	}

	/** {@code pid <pid>@<host>}. */
	private static String describeProcess() {
		return "pid " + InstanceNames.defaultName(null);
	}

}
