package dev.holdfast.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

import javax.sql.DataSource;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * The one release listener of a {@link JdbcLockBackend} on PostgreSQL: one connection taken from
 * the backend's pool, on which one daemon thread of the backend runs {@code LISTEN} on the
 * table's release channel and hands each announced key to every listener. Opened in the
 * background on the first subscription, closed (after {@code UNLISTEN}, back to the pool) when
 * the last listener leaves or the backend closes. Every few seconds without a notification, the
 * thread checks the connection with a query bounded by the backend's timeout; a connection that
 * fails is given up and a new one is opened a second later, and meanwhile the backend does not
 * {@linkplain #isUsable() announce releases}, so that waiters poll.
 */
final class PostgresReleaseListener implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(JdbcLockBackend.class);

	/** How long one wait for notifications lasts: the longest a closing listener keeps its connection. */
	private static final int WAIT_MILLIS = 200;

	/** How long without notifications before the connection is checked with a query. */
	private static final long CHECK_AFTER_NANOS = TimeUnit.SECONDS.toNanos(5);

	/** The pause before a lost connection is replaced. */
	private static final long REOPEN_PAUSE_MILLIS = 1000;

	/** How long closing waits for the thread to give its connection back to the pool. */
	private static final long CLOSE_WAIT_MILLIS = 2 * WAIT_MILLIS + 1000;

	enum State {

		/** No listener, no connection. */
		IDLE,

		/** A connection is being opened, the first time. */
		OPENING,

		/** {@code LISTEN} is in effect on the connection. */
		LISTENING,

		/** The connection failed or could not be opened; another is opened after a pause. */
		LOST,

		/** The pool's connections are not the PostgreSQL driver's: no notifications, ever. */
		UNSUPPORTED

	}

	private final DataSource dataSource;

	private final String channel;

	private final int timeoutMillis;

	private final List<Consumer<String>> listeners = new CopyOnWriteArrayList<>();

	private final ReentrantLock lifecycleLock = new ReentrantLock();

	private @Nullable Thread thread;

	/** Incremented when the last listener leaves or the listener closes: the running thread ends. */
	private volatile int generation;

	private volatile State state = State.IDLE;

	private volatile boolean closed;

	private boolean warned;

	PostgresReleaseListener(DataSource dataSource, String channel, int timeoutMillis) {
		this.dataSource = dataSource;
		this.channel = channel;
		this.timeoutMillis = timeoutMillis;
	}

	/**
	 * Adds a listener of released keys; the first one starts the listening thread, which opens
	 * the connection without the caller waiting for it.
	 * @throws IllegalStateException if the backend is closed
	 */
	AutoCloseable subscribe(Consumer<String> listener) {
		this.lifecycleLock.lock();
		try {
			if (this.closed) {
				throw new IllegalStateException("The JDBC lock backend is closed");
			}
			this.listeners.add(listener);
			if (this.thread == null && this.state != State.UNSUPPORTED) {
				int current = this.generation;
				Thread started = new Thread(() -> listen(current), "holdfast-jdbc-listener");
				started.setDaemon(true);
				this.thread = started;
				this.state = State.OPENING;
				started.start();
			}
		}
		finally {
			this.lifecycleLock.unlock();
		}
		return () -> unsubscribe(listener);
	}

	private void unsubscribe(Consumer<String> listener) {
		Thread stopped = null;
		this.lifecycleLock.lock();
		try {
			if (this.listeners.remove(listener) && this.listeners.isEmpty()) {
				stopped = stopThread();
			}
		}
		finally {
			this.lifecycleLock.unlock();
		}
		awaitEnd(stopped);
	}

	/** Called under the lifecycle lock. */
	private @Nullable Thread stopThread() {
		Thread stopped = this.thread;
		this.thread = null;
		this.generation++;
		if (this.state != State.UNSUPPORTED) {
			this.state = State.IDLE;
		}
		return stopped;
	}

	private static void awaitEnd(@Nullable Thread stopped) {
		if (stopped == null || stopped == Thread.currentThread()) {
			return;
		}
		try {
			stopped.join(CLOSE_WAIT_MILLIS);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	/** Whether {@code LISTEN} is in effect, so that announced releases reach the listeners. */
	boolean isListening() {
		return this.state == State.LISTENING;
	}

	/**
	 * Whether releases can reach the listeners: not while a lost connection is being replaced,
	 * nor when the pool's connections cannot listen.
	 */
	boolean isUsable() {
		State current = this.state;
		return current != State.LOST && current != State.UNSUPPORTED;
	}

	State state() {
		return this.state;
	}

	/** Ends the listening thread, which gives its connection back; later subscriptions are refused. */
	@Override
	public void close() {
		Thread stopped;
		this.lifecycleLock.lock();
		try {
			this.closed = true;
			this.listeners.clear();
			stopped = stopThread();
		}
		finally {
			this.lifecycleLock.unlock();
		}
		awaitEnd(stopped);
	}

	/** Sets the state unless the thread of {@code generation} was stopped meanwhile. */
	private void setState(int generation, State state) {
		this.lifecycleLock.lock();
		try {
			if (current(generation)) {
				this.state = state;
			}
		}
		finally {
			this.lifecycleLock.unlock();
		}
	}

	private boolean current(int generation) {
		return this.generation == generation && !this.closed;
	}

	/** The listening thread: one connection at a time, replaced after a failure, until stopped. */
	private void listen(int generation) {
		while (current(generation)) {
			try {
				listenOnce(generation);
			}
			catch (UnsupportedOperationException ex) {
				setState(generation, State.UNSUPPORTED);
				logger.info("Holdfast's JDBC lock backend cannot listen for release notifications (" + ex.getMessage()
						+ "); waiters on other instances poll");
				return;
			}
			catch (SQLException | RuntimeException ex) {
				if (!current(generation)) {
					return;
				}
				setState(generation, State.LOST);
				if (!this.warned) {
					this.warned = true;
					logger.warn("Holdfast lost the connection that listens for lock releases on PostgreSQL ("
							+ ex.getMessage() + "); waiters poll until it is replaced (every second)");
				}
				else if (logger.isDebugEnabled()) {
					logger.debug("Holdfast could not listen for lock releases on PostgreSQL", ex);
				}
				try {
					Thread.sleep(REOPEN_PAUSE_MILLIS);
				}
				catch (InterruptedException interrupted) {
					return;
				}
			}
		}
	}

	private void listenOnce(int generation) throws SQLException {
		try (Connection connection = this.dataSource.getConnection()) {
			PGConnection pg;
			try {
				pg = connection.unwrap(PGConnection.class);
			}
			catch (SQLException | LinkageError ex) {
				throw new UnsupportedOperationException("the pool's connections are not PostgreSQL driver's: " + ex);
			}
			boolean listened = false;
			int previousTimeout = JdbcConnections.networkTimeout(connection, this.timeoutMillis);
			try (Statement statement = connection.createStatement()) {
				if (!connection.getAutoCommit()) {
					connection.setAutoCommit(true);
				}
				statement.execute("LISTEN " + this.channel);
				listened = true;
				setState(generation, State.LISTENING);
				this.warned = false;
				long checked = System.nanoTime();
				while (current(generation)) {
					PGNotification[] notifications = pg.getNotifications(WAIT_MILLIS);
					if (notifications != null && notifications.length > 0) {
						checked = System.nanoTime();
						for (PGNotification notification : notifications) {
							if (this.channel.equals(notification.getName())) {
								dispatch(notification.getParameter());
							}
						}
					}
					else if (System.nanoTime() - checked > CHECK_AFTER_NANOS) {
						// A silent network would leave this connection waiting for ever: a query
						// fails within the network timeout instead.
						statement.execute("SELECT 1");
						checked = System.nanoTime();
					}
				}
				statement.execute("UNLISTEN *");
				listened = false;
			}
			finally {
				if (listened) {
					// Back in the pool, a listening connection would collect notifications for ever.
					try {
						connection.abort(Runnable::run);
					}
					catch (SQLException | RuntimeException ex) {
						logger.debug("Could not abort the listening connection", ex);
					}
				}
				else if (previousTimeout >= 0 && !connection.isClosed()) {
					JdbcConnections.networkTimeout(connection, previousTimeout);
				}
			}
		}
	}

	private void dispatch(String key) {
		for (Consumer<String> listener : this.listeners) {
			try {
				listener.accept(key);
			}
			catch (RuntimeException ex) {
				logger.debug("A release listener failed", ex);
			}
		}
	}

}
