package dev.holdfast.jdbc;

import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

import org.springframework.util.ClassUtils;

/**
 * The release events of a {@link JdbcLockBackend}: on PostgreSQL with its driver, unless turned
 * off, one {@link PostgresReleaseListener}, made once the first statement told which database
 * this is; none on other databases. Its subscribers hear the releases that concern their backend
 * instance: every plain release, and the reservations for this instance.
 */
final class PostgresReleaseEvents implements AutoCloseable {

	private static final boolean POSTGRES_DRIVER = ClassUtils.isPresent("org.postgresql.PGConnection",
			PostgresReleaseEvents.class.getClassLoader());

	private final JdbcConnections connections;

	private final String instance;

	private volatile @Nullable PostgresReleaseListener listener;

	/** Whether release events are used on PostgreSQL; set before the first statement. */
	private volatile boolean enabled = true;

	private volatile boolean closed;

	PostgresReleaseEvents(JdbcConnections connections, String instance) {
		this.connections = connections;
		this.instance = instance;
	}

	void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	boolean isEnabled() {
		return this.enabled;
	}

	/** The listener, made on first use on PostgreSQL once the dialect is known; {@code null} otherwise. */
	@Nullable PostgresReleaseListener listener() {
		PostgresReleaseListener current = this.listener;
		if (current == null && this.enabled && POSTGRES_DRIVER && !this.closed
				&& this.connections.dialect() instanceof PostgreSqlDialect postgres) {
			synchronized (this) {
				current = this.listener;
				if (current == null) {
					current = new PostgresReleaseListener(this.connections.dataSource(), postgres.channel(),
							this.connections.timeoutMillis());
					this.listener = current;
				}
			}
		}
		return current;
	}

	/**
	 * See {@link JdbcLockBackend#subscribe(Consumer, Runnable)}.
	 * @throws IllegalStateException if the backend is closed
	 */
	AutoCloseable subscribe(Consumer<String> listener, Runnable onInterrupted) {
		if (this.closed) {
			throw new IllegalStateException("The JDBC lock backend is closed");
		}
		PostgresReleaseListener releases = listener();
		return (releases != null) ? releases.subscribe((payload) -> {
			String key = PostgreSqlDialect.keyFor(payload, this.instance);
			if (key != null) {
				listener.accept(key);
			}
		}, onInterrupted) : () -> {
		};
	}

	boolean isListening() {
		PostgresReleaseListener releases = listener();
		return releases != null && releases.isListening();
	}

	/** Whether releases reach the subscribers now: see {@link JdbcLockBackend#announcesReleases()}. */
	boolean isUsable() {
		PostgresReleaseListener releases = listener();
		return releases != null && releases.isUsable() && !this.closed;
	}

	/** Closes the listener, if any; later subscriptions are refused. */
	@Override
	public void close() {
		this.closed = true;
		PostgresReleaseListener releases = this.listener;
		if (releases != null) {
			releases.close();
		}
	}

}
