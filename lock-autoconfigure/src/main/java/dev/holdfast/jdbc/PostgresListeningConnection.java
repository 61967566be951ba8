package dev.holdfast.jdbc;

import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

import javax.sql.DataSource;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

import org.springframework.util.ReflectionUtils;

/**
 * The connection on which a {@link PostgresReleaseListener} listens: taken from the pool,
 * {@code LISTEN} on the release channel, proved with an empty notification of its own that must
 * come back under the backend's timeout (right after {@code LISTEN}, and after every second
 * without a notification), and given back after {@code UNLISTEN}, or kept out of the pool when it
 * may still listen.
 */
final class PostgresListeningConnection {

	private static final Log logger = LogFactory.getLog(JdbcLockBackend.class);

	/** How long one wait for notifications lasts: the longest a closing listener keeps its connection. */
	static final int WAIT_MILLIS = 200;

	/** How long without notifications before the connection is checked with a notification of its own. */
	private static final long CHECK_AFTER_NANOS = TimeUnit.SECONDS.toNanos(1);

	/** The payload of the listener's own check: never a lock key (keys are not empty). */
	private static final String CHECK_PAYLOAD = "";

	private final DataSource dataSource;

	private final String channel;

	private final int timeoutMillis;

	private volatile boolean announcedConnection;

	/** The server process of the listening connection, 0 when none listens; for tests. */
	private volatile int backendPid;

	PostgresListeningConnection(DataSource dataSource, String channel, int timeoutMillis) {
		this.dataSource = dataSource;
		this.channel = channel;
		this.timeoutMillis = timeoutMillis;
	}

	/** The server process id of the listening connection, 0 when none listens; for tests. */
	int backendPid() {
		return this.backendPid;
	}

	/**
	 * Listens on a connection of the pool until {@code wanted} turns false, handing each announced
	 * key to {@code deliver}; {@code listening} runs once the connection proved that notifications
	 * reach it. Gives the connection back (after {@code UNLISTEN}), or keeps it out of the pool if
	 * it may still listen.
	 * @throws UnsupportedOperationException if the pool's connections are not the PostgreSQL
	 * driver's
	 * @throws DeafConnectionException if the connection never received its own first check
	 * @throws SQLException if the connection failed, or stopped delivering its checks
	 */
	void listen(BooleanSupplier wanted, Runnable listening, Consumer<String> deliver) throws SQLException {
		try (Connection connection = this.dataSource.getConnection()) {
			PGConnection pg;
			try {
				pg = connection.unwrap(PGConnection.class);
			}
			catch (SQLException | LinkageError ex) {
				throw new UnsupportedOperationException("the pool's connections are not PostgreSQL driver's: " + ex);
			}
			if (!this.announcedConnection) {
				this.announcedConnection = true;
				logger.info("Holdfast's JDBC lock backend keeps one connection of the pool for LISTEN (release"
						+ " events on PostgreSQL); set holdfast.jdbc.release-events=false to give it back and poll");
			}
			boolean listened = false;
			int previousTimeout = JdbcConnections.networkTimeout(connection, this.timeoutMillis);
			// Else every delivery waits for the driver's 1 ms look for more (see the class).
			PostgresNotificationWait.Skipped stream = PostgresNotificationWait.skipTrailingRead(pg);
			try (Statement statement = connection.createStatement()) {
				if (!connection.getAutoCommit()) {
					connection.setAutoCommit(true);
				}
				statement.execute("LISTEN " + this.channel);
				listened = true;
				long checkNanos = TimeUnit.MILLISECONDS.toNanos(Math.max(1000, this.timeoutMillis));
				// Proves that notifications reach this connection before waiters count on them.
				check(statement);
				long sent = System.nanoTime();
				boolean arrived = false;
				while (!arrived && wanted.getAsBoolean()) {
					arrived = deliver(pg.getNotifications(WAIT_MILLIS), deliver);
					if (!arrived && System.nanoTime() - sent > checkNanos) {
						throw new DeafConnectionException("the listening connection did not receive its own"
								+ " notification within " + TimeUnit.NANOSECONDS.toMillis(checkNanos) + " ms");
					}
				}
				if (!wanted.getAsBoolean()) {
					unlisten(statement);
					listened = false;
					return;
				}
				this.backendPid = pg.getBackendPID();
				listening.run();
				long heard = System.nanoTime();
				long checkSent = 0;
				while (wanted.getAsBoolean()) {
					if (deliver(pg.getNotifications(WAIT_MILLIS), deliver)) {
						heard = System.nanoTime();
						checkSent = 0;
					}
					else if (checkSent != 0 && System.nanoTime() - checkSent > checkNanos) {
						throw new SQLException("the listening connection did not receive its own notification within "
								+ TimeUnit.NANOSECONDS.toMillis(checkNanos) + " ms");
					}
					else if (checkSent == 0 && System.nanoTime() - heard > CHECK_AFTER_NANOS) {
						// A silent network, or a connection that stopped delivering, would leave
						// waiters asleep for announcements: a round trip through the notification
						// path fails within the network timeout, or does not come back.
						check(statement);
						checkSent = System.nanoTime();
					}
				}
				unlisten(statement);
				listened = false;
			}
			finally {
				this.backendPid = 0;
				// First, whatever follows: a connection that goes back to the pool, even one whose
				// abort failed, reads notifications as the driver does (harmless on an aborted one).
				PostgresNotificationWait.restore(stream);
				if (listened) {
					// Back in the pool, a listening connection would collect notifications for ever.
					try {
						connection.abort(Runnable::run);
					}
					catch (SQLException | RuntimeException ex) {
						logger.debug("Could not abort the listening connection", ex);
						evict(connection);
					}
				}
				else if (!connection.isClosed()) {
					if (previousTimeout >= 0) {
						JdbcConnections.networkTimeout(connection, previousTimeout);
					}
				}
			}
		}
	}

	/**
	 * Keeps a connection that still listens out of the pool: evicted from a pool that can
	 * ({@code evictConnection}, as Hikari's), else its physical connection closed (the pool then
	 * finds it closed and drops it).
	 */
	private void evict(Connection connection) {
		try {
			Method evict = ReflectionUtils.findMethod(this.dataSource.getClass(), "evictConnection", Connection.class);
			if (evict != null) {
				evict.invoke(this.dataSource, connection);
				return;
			}
		}
		catch (ReflectiveOperationException | RuntimeException ex) {
			logger.debug("Could not evict the listening connection from the pool", ex);
		}
		try {
			((Connection) connection.unwrap(PGConnection.class)).close();
		}
		catch (SQLException | RuntimeException ex) {
			logger.debug("Could not close the listening connection", ex);
		}
	}

	private void check(Statement statement) throws SQLException {
		statement.execute("SELECT pg_notify('" + this.channel + "', '" + CHECK_PAYLOAD + "')");
	}

	private static void unlisten(Statement statement) throws SQLException {
		statement.execute("UNLISTEN *");
	}

	/**
	 * Hands the keys of {@code notifications} to the listeners.
	 * @return whether any notification of the channel came, the checks included
	 */
	private boolean deliver(PGNotification @Nullable [] notifications, Consumer<String> deliver) {
		boolean any = false;
		if (notifications != null) {
			for (PGNotification notification : notifications) {
				if (this.channel.equals(notification.getName())) {
					any = true;
					String key = notification.getParameter();
					if (!CHECK_PAYLOAD.equals(key)) {
						deliver.accept(key);
					}
				}
			}
		}
		return any;
	}

	/** A connection on which LISTEN was accepted but whose own notification never came. */
	static final class DeafConnectionException extends RuntimeException {

		private static final long serialVersionUID = 1L;

		DeafConnectionException(String message) {
			super(message);
		}

	}

}
