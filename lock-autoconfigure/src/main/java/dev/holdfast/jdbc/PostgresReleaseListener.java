package dev.holdfast.jdbc;

import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

import javax.sql.DataSource;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.util.DigestUtils;
import org.springframework.util.ReflectionUtils;

/**
 * The one release listener of a {@link JdbcLockBackend} on PostgreSQL: one connection taken from
 * the backend's pool, on which one daemon thread of the backend runs {@code LISTEN} on the
 * table's release channel and hands each announced key to every listener. Opened in the
 * background on the first subscription, closed (after {@code UNLISTEN}, back to the pool) when
 * the last listener leaves or the backend closes.
 * <p>
 * The connection must prove that notifications reach it: right after {@code LISTEN}, and after
 * every second without a notification, the thread sends an empty notification on its own
 * channel and waits for it (under the backend's timeout). Three connections in a row that never
 * deliver their first one (a transaction pooler such as PgBouncer in transaction mode, which gives the
 * {@code LISTEN} to a server connection the client then loses) make the backend stop announcing
 * releases, with one WARN; one that stops delivering later, or fails, is replaced after a pause
 * (1 s, doubling to 60 s while it keeps failing). Whenever deliveries stop, every listener's
 * interruption callback runs, so that waiters asleep for an announcement look again and poll;
 * meanwhile the backend does not {@linkplain #isUsable() announce releases}. A closed pool ends
 * the listening for good.
 */
final class PostgresReleaseListener implements AutoCloseable {

	private static final Log logger = LogFactory.getLog(JdbcLockBackend.class);

	/** The first pause before a lost connection is replaced; it doubles while replacing fails. */
	private static final long REOPEN_PAUSE_MILLIS = 1000;

	/** The longest pause before a lost connection is replaced. */
	private static final long MAX_REOPEN_PAUSE_MILLIS = 60_000;

	/** How long closing waits for the thread to give its connection back to the pool. */
	private static final long CLOSE_WAIT_MILLIS = 2 * PostgresListeningConnection.WAIT_MILLIS + 1000;

	/** Connections in a row that never deliver their first check before announcements are turned off. */
	private static final int DEAF_CONNECTIONS = 3;

	enum State {

		/** No listener, no connection. */
		IDLE,

		/** A connection is being opened, the first time. */
		OPENING,

		/** {@code LISTEN} is in effect on the connection, and a notification of its own came through. */
		LISTENING,

		/** The connection failed or could not be opened; another is opened after a pause. */
		LOST,

		/**
		 * No notifications, ever: the pool's connections are not the PostgreSQL driver's, three in
		 * a row did not deliver notifications (a transaction pooler), or the pool is closed.
		 */
		UNSUPPORTED

	}

	/** A listener of released keys, and what to call when deliveries stop. */
	private record Subscriber(Consumer<String> onRelease, Runnable onInterrupted) {
	}

	private final DataSource dataSource;

	private final PostgresListeningConnection connection;

	private final List<Subscriber> listeners = new CopyOnWriteArrayList<>();

	private final ReentrantLock lifecycleLock = new ReentrantLock();

	private volatile @Nullable Thread thread;

	/** Incremented when the last listener leaves or the listener closes: the running thread ends. */
	private volatile int generation;

	private volatile State state = State.IDLE;

	private volatile boolean closed;

	private volatile boolean warned;

	/** Failed connections in a row, by the listening thread: the pause before the next one grows. */
	private volatile int failures;

	/** Connections in a row whose first check notification never came. */
	private volatile int deafInRow;

	PostgresReleaseListener(DataSource dataSource, String channel, int timeoutMillis) {
		this.dataSource = dataSource;
		this.connection = new PostgresListeningConnection(dataSource, channel, timeoutMillis);
	}

	/** The notification channel of the releases of {@code table}, as the database resolves it. */
	static String channelOf(Connection connection, String table) {
		return releaseChannel(relation(connection, table));
	}

	/**
	 * The notification channel of releases of {@code relation} (a {@link #relation}): the same in
	 * every process that uses that table, short enough for PostgreSQL's 63-byte identifiers
	 * whatever the name.
	 */
	static String releaseChannel(String relation) {
		return "holdfast_" + DigestUtils.md5DigestAsHex(relation.getBytes(StandardCharsets.UTF_8)).substring(0, 20);
	}

	/**
	 * The lock table as PostgreSQL resolves it, {@code schema.table} in lower case (names are
	 * unquoted, so PostgreSQL folds them): {@code holdfast_lock}, {@code HOLDFAST_LOCK} and
	 * {@code public.holdfast_lock} are one table, and get one channel. An unqualified name is
	 * qualified by the schema that holds the table on the search path, else by the current schema.
	 */
	static String relation(Connection connection, String table) {
		String lower = table.toLowerCase(Locale.ROOT);
		if (lower.indexOf('.') >= 0) {
			return lower;
		}
		try (PreparedStatement ps = connection.prepareStatement("SELECT coalesce((SELECT n.nspname FROM pg_class c"
				+ " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass(?)), current_schema())")) {
			ps.setString(1, lower);
			try (ResultSet rs = ps.executeQuery()) {
				String schema = rs.next() ? rs.getString(1) : null;
				return (schema != null) ? schema + "." + lower : lower;
			}
		}
		catch (SQLException ex) {
			logger.debug("Could not resolve the schema of the lock table " + table, ex);
			return lower;
		}
	}

	/**
	 * Adds a listener of released keys; the first one starts the listening thread, which opens
	 * the connection without the caller waiting for it.
	 * @param onInterrupted called (on the listening thread, or the closing one) when deliveries
	 * stop: the connection was lost or the listener closed
	 * @throws IllegalStateException if the backend is closed
	 */
	AutoCloseable subscribe(Consumer<String> listener, Runnable onInterrupted) {
		Subscriber subscriber = new Subscriber(listener, onInterrupted);
		this.lifecycleLock.lock();
		try {
			if (this.closed) {
				throw new IllegalStateException("The JDBC lock backend is closed");
			}
			this.listeners.add(subscriber);
			startIfNeeded();
		}
		finally {
			this.lifecycleLock.unlock();
		}
		return () -> unsubscribe(subscriber);
	}

	/** Called under the lifecycle lock: starts the thread if listeners need one and none runs. */
	private void startIfNeeded() {
		if (this.thread == null && this.state != State.UNSUPPORTED && !this.closed && !this.listeners.isEmpty()) {
			int current = this.generation;
			Thread started = new Thread(() -> listen(current), "holdfast-jdbc-listener");
			started.setDaemon(true);
			this.thread = started;
			if (this.state == State.IDLE) {
				this.state = State.OPENING;
			}
			started.start();
		}
	}

	private void unsubscribe(Subscriber subscriber) {
		Thread stopped = null;
		this.lifecycleLock.lock();
		try {
			if (this.listeners.remove(subscriber) && this.listeners.isEmpty()) {
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
	 * nor when the pool's connections cannot listen. Restarts a listening thread that ended
	 * unexpectedly.
	 */
	boolean isUsable() {
		State current = this.state;
		if (current == State.LOST && this.thread == null && !this.closed) {
			// The thread ended on something it could not handle: another one takes over.
			this.lifecycleLock.lock();
			try {
				startIfNeeded();
			}
			finally {
				this.lifecycleLock.unlock();
			}
		}
		return current != State.LOST && current != State.UNSUPPORTED;
	}

	State state() {
		return this.state;
	}

	/** The server process id of the listening connection, 0 when none listens; for tests. */
	int backendPid() {
		return this.connection.backendPid();
	}

	/** Ends the listening thread, which gives its connection back; later subscriptions are refused. */
	@Override
	public void close() {
		Thread stopped;
		List<Subscriber> interrupted;
		this.lifecycleLock.lock();
		try {
			this.closed = true;
			interrupted = List.copyOf(this.listeners);
			this.listeners.clear();
			stopped = stopThread();
		}
		finally {
			this.lifecycleLock.unlock();
		}
		interrupt(interrupted);
		awaitEnd(stopped);
	}

	/** Sets the state unless the thread of {@code generation} was stopped meanwhile. */
	private boolean setState(int generation, State state) {
		this.lifecycleLock.lock();
		try {
			if (current(generation)) {
				this.state = state;
				return true;
			}
			return false;
		}
		finally {
			this.lifecycleLock.unlock();
		}
	}

	private boolean current(int generation) {
		return this.generation == generation && !this.closed;
	}

	/**
	 * The listening thread: one connection at a time, replaced after a failure, until stopped.
	 * Whatever ends it, the state tells that nothing listens, and listeners are told.
	 */
	private void listen(int generation) {
		try {
			while (current(generation)) {
				try {
					this.connection.listen(() -> current(generation), () -> listening(generation), this::dispatch);
				}
				catch (UnsupportedOperationException ex) {
					if (setState(generation, State.UNSUPPORTED)) {
						logger.info("Holdfast's JDBC lock backend cannot listen for release notifications ("
								+ ex.getMessage() + "); waiters on other instances poll");
					}
					return;
				}
				catch (PostgresListeningConnection.DeafConnectionException ex) {
					if (++this.deafInRow < DEAF_CONNECTIONS) {
						// Maybe only a slow moment of the server: another connection, after a pause,
						// before the one WARN below.
						if (!setState(generation, State.LOST)) {
							return;
						}
						interrupt(this.listeners);
						logger.debug("Holdfast's listening connection did not receive its own check notification", ex);
						if (!pause(++this.failures)) {
							return;
						}
						continue;
					}
					if (setState(generation, State.UNSUPPORTED)) {
						logger.warn("Holdfast's JDBC lock backend turned release events off: " + ex.getMessage()
								+ ". LISTEN needs a session-level connection: behind a transaction pooler (PgBouncer"
								+ " in pool_mode=transaction, RDS Proxy, Supavisor) connect the pool in session mode,"
								+ " or set holdfast.jdbc.release-events=false; waiters poll meanwhile");
					}
					return;
				}
				catch (Throwable ex) {
					if (!current(generation)) {
						return;
					}
					if (poolClosed(ex)) {
						if (setState(generation, State.UNSUPPORTED)) {
							logger.info("Holdfast's JDBC lock backend stops listening for lock releases: the"
									+ " connection pool is closed");
						}
						return;
					}
					int inRow = ++this.failures;
					if (!lost(generation, ex, inRow) || !pause(inRow)) {
						return;
					}
				}
			}
		}
		finally {
			this.lifecycleLock.lock();
			try {
				if (this.thread == Thread.currentThread()) {
					this.thread = null;
					if (current(generation) && this.state != State.UNSUPPORTED) {
						// Ended by something it could not handle: isUsable() starts another.
						this.state = State.LOST;
					}
				}
			}
			finally {
				this.lifecycleLock.unlock();
			}
			interrupt(this.listeners);
		}
	}

	/** The connection proved that notifications reach it. */
	private void listening(int generation) {
		setState(generation, State.LISTENING);
		this.warned = false;
		this.failures = 0;
		this.deafInRow = 0;
	}

	/** The connection failed: nothing listens until another one does. */
	private boolean lost(int generation, Throwable ex, int failures) {
		if (!setState(generation, State.LOST)) {
			return false;
		}
		interrupt(this.listeners);
		if (!this.warned) {
			this.warned = true;
			logger.warn("Holdfast lost the connection that listens for lock releases on PostgreSQL (" + ex
					+ "); waiters poll until it is replaced");
		}
		else if (logger.isDebugEnabled()) {
			logger.debug("Holdfast could not listen for lock releases on PostgreSQL (" + failures
					+ " failures in a row)", ex);
		}
		return true;
	}

	/** The pause before the next connection: 1 s, doubling while connecting keeps failing, at most 60 s. */
	private static boolean pause(int failures) {
		long millis = REOPEN_PAUSE_MILLIS << Math.min(failures - 1, 6);
		try {
			Thread.sleep(Math.min(millis, MAX_REOPEN_PAUSE_MILLIS));
			return true;
		}
		catch (InterruptedException interrupted) {
			return false;
		}
	}

	/** Whether {@code ex} says the pool is closed for good (Hikari's message), or the pool says so. */
	private boolean poolClosed(Throwable ex) {
		if (ex instanceof SQLException && ex.getMessage() != null && ex.getMessage().contains("has been closed")) {
			return true;
		}
		try {
			Method isClosed = ReflectionUtils.findMethod(this.dataSource.getClass(), "isClosed");
			return isClosed != null && isClosed.getReturnType() == boolean.class
					&& Boolean.TRUE.equals(isClosed.invoke(this.dataSource));
		}
		catch (ReflectiveOperationException | RuntimeException ignored) {
			return false;
		}
	}

	private void dispatch(String key) {
		for (Subscriber listener : this.listeners) {
			try {
				listener.onRelease().accept(key);
			}
			catch (Throwable ex) {
				logger.debug("A release listener failed", ex);
			}
		}
	}

	private static void interrupt(List<Subscriber> subscribers) {
		for (Subscriber listener : subscribers) {
			try {
				listener.onInterrupted().run();
			}
			catch (Throwable ex) {
				logger.debug("A release listener failed", ex);
			}
		}
	}

}
