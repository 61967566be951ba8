package dev.holdfast.jdbc;

import java.lang.reflect.Field;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.postgresql.PGConnection;
import org.postgresql.core.BaseConnection;

/**
 * Makes the PostgreSQL driver's {@code getNotifications(timeout)} return as soon as the
 * notifications it read are delivered, on the one connection that listens for releases.
 * <p>
 * Once a notification came, pgjdbc (42.x) looks for more before it returns:
 * {@code PGStream.hasMessagePending()} reads the socket with a 1 ms timeout whenever its buffer
 * is empty, which it is after a lone notification. So every announced release reached the
 * listener's thread at least 1 ms after the server sent it (measured 1.2 ms p50 from the
 * {@code pg_notify} answer to the dispatch, 0.04 ms without that read), which made a handoff to
 * another instance about four times slower than one within the instance. The stream skips that
 * read while its {@code nextStreamAvailableCheckTime} lies ahead (a throttle of its own); this
 * sets it to the far future on the listening connection (before its {@code LISTEN}) and back to
 * the value it replaced when the listening ends, before the connection returns to the pool.
 * Nothing is lost: notifications already in the buffer are still read in the same call, and
 * bytes that arrive later are read by the next call, which blocks on the socket. The fields are the driver's private ones. pgjdbc is an automatic module, whose
 * packages are open, so they are reached on the class path and the module path alike (and in a
 * native image through Holdfast's runtime hints); with a driver that lacks them (a renamed field,
 * a repackaged driver) nothing changes and deliveries keep the 1 ms, logged once at INFO.
 */
final class PostgresNotificationWait {

	private static final Log logger = LogFactory.getLog(JdbcLockBackend.class);

	private static final @Nullable Field PG_STREAM = field("org.postgresql.core.QueryExecutorBase", "pgStream",
			null);

	private static final @Nullable Field NEXT_CHECK = field("org.postgresql.core.PGStream",
			"nextStreamAvailableCheckTime", long.class);

	static {
		if (PG_STREAM == null || NEXT_CHECK == null) {
			logger.info("The PostgreSQL driver lacks the fields that Holdfast adjusts on its listening connection"
					+ " (QueryExecutorBase.pgStream, PGStream.nextStreamAvailableCheckTime): each release"
					+ " notification reaches the listener about 1 ms late; locks are unaffected");
		}
	}

	private PostgresNotificationWait() {
	}

	/** Whether the driver's fields were found, so that {@link #skipTrailingRead} can act; for tests. */
	static boolean available() {
		return PG_STREAM != null && NEXT_CHECK != null;
	}

	/**
	 * Stops the driver's trailing 1 ms read after notifications on {@code connection}.
	 * @return what to give to {@link #restore}: the driver's stream and the value replaced, or
	 * {@code null} if the driver could not be adjusted
	 */
	static @Nullable Skipped skipTrailingRead(PGConnection connection) {
		if (PG_STREAM == null || NEXT_CHECK == null || !(connection instanceof BaseConnection base)) {
			return null;
		}
		try {
			Object stream = PG_STREAM.get(base.getQueryExecutor());
			if (stream == null || !NEXT_CHECK.getDeclaringClass().isInstance(stream)) {
				return null;
			}
			long previous = NEXT_CHECK.getLong(stream);
			NEXT_CHECK.setLong(stream, Long.MAX_VALUE);
			return new Skipped(stream, previous);
		}
		catch (IllegalAccessException | RuntimeException ex) {
			logger.debug("Could not shorten the PostgreSQL driver's notification wait", ex);
			return null;
		}
	}

	/** Gives the stream of {@link #skipTrailingRead} the value it had before. */
	static void restore(@Nullable Skipped skipped) {
		if (skipped != null && NEXT_CHECK != null) {
			try {
				NEXT_CHECK.setLong(skipped.stream, skipped.previous);
			}
			catch (IllegalAccessException | RuntimeException ex) {
				logger.debug("Could not restore the PostgreSQL driver's notification wait", ex);
			}
		}
	}

	/** A stream whose trailing read is skipped, and the value of its field before. */
	record Skipped(Object stream, long previous) {
	}

	private static @Nullable Field field(String className, String name, @Nullable Class<?> type) {
		try {
			Class<?> owner = Class.forName(className, false, PGConnection.class.getClassLoader());
			Field field = owner.getDeclaredField(name);
			if (type != null && field.getType() != type) {
				return null;
			}
			field.setAccessible(true);
			return field;
		}
		catch (ReflectiveOperationException | RuntimeException | LinkageError ex) {
			logger.debug("The PostgreSQL driver has no " + className + "." + name
					+ ": each release notification reaches the listener 1 ms late", ex);
			return null;
		}
	}

}
