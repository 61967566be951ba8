package dev.holdfast.jdbc;

import java.time.Duration;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockConfigurationException;

/**
 * Deletes the rows of a {@link JdbcLockBackend}'s table that expired, and whose fencing token was
 * issued, longer than the sweep delay ago: every {@value #SWEEP_EVERY}th release starts, off the
 * releasing thread, a sweep of at most {@value #SWEEP_LIMIT} such rows on a connection of its
 * own. At most one sweep runs at a time, on a daemon thread that ends when idle; a sweep due
 * while one runs is dropped (the next one catches up). A sweep that fails is logged and does not
 * fail the release.
 */
final class JdbcSweeper {

	/** The shortest sweep delay allowed, whatever the query timeout. */
	static final Duration MIN_SWEEP_AFTER = Duration.ofMinutes(1);

	/** Releases of one backend per sweep. */
	static final int SWEEP_EVERY = 500;

	/** Most rows one sweep deletes: a sweep per {@value #SWEEP_EVERY} releases keeps up. */
	static final int SWEEP_LIMIT = 500;

	private static final Log logger = LogFactory.getLog(JdbcLockBackend.class);

	private final JdbcConnections connections;

	private final long sweepAfterMicros;

	private final AtomicLong releases = new AtomicLong();

	private volatile int sweepEvery = SWEEP_EVERY;

	private final ThreadPoolExecutor sweeper = new ThreadPoolExecutor(0, 1, 10, TimeUnit.SECONDS,
			new SynchronousQueue<>(), (task) -> {
				Thread thread = new Thread(task, "holdfast-jdbc-sweep");
				thread.setDaemon(true);
				return thread;
			}, new ThreadPoolExecutor.DiscardPolicy());

	/**
	 * @param sweepAfter how long a row stays after it expired or was released, checked with
	 * {@link #validate}
	 */
	JdbcSweeper(JdbcConnections connections, Duration sweepAfter) {
		this.connections = connections;
		this.sweepAfterMicros = Math.multiplyExact(sweepAfter.toMillis(), 1000);
	}

	/**
	 * Returns {@code sweepAfter} if rows that expired that long ago may be deleted safely: it is at
	 * least {@link #MIN_SWEEP_AFTER a minute} and at least ten times {@code queryTimeout}, so no
	 * lock statement that read the database clock before such a row was last taken can still be
	 * running.
	 * @throws LockConfigurationException naming the value, the minimum and the property to change
	 * otherwise
	 */
	static Duration validate(@Nullable Duration sweepAfter, Duration queryTimeout) {
		Duration minimum = queryTimeout.multipliedBy(10);
		if (minimum.compareTo(MIN_SWEEP_AFTER) < 0) {
			minimum = MIN_SWEEP_AFTER;
		}
		if (sweepAfter == null || sweepAfter.compareTo(minimum) < 0) {
			throw new LockConfigurationException("holdfast.jdbc.sweep-after is "
					+ ((sweepAfter != null) ? format(sweepAfter) : "not set") + ": expired lock rows must stay at least "
					+ format(minimum) + " (a minute, and ten times holdfast.jdbc.query-timeout="
					+ format(queryTimeout) + ") before they are deleted, or a stalled acquisition could get a"
					+ " smaller fencing token than an earlier holder.",
					"Set holdfast.jdbc.sweep-after to at least " + format(minimum) + " (the default is "
							+ format(JdbcLockBackend.DEFAULT_SWEEP_AFTER) + "), or remove it.");
		}
		return sweepAfter;
	}

	private static String format(Duration duration) {
		return (duration.toMillis() % 1000 == 0) ? duration.toSeconds() + "s" : duration.toMillis() + "ms";
	}

	/** A release went through: starts a sweep in the background if one is due. */
	void released() {
		if (this.releases.incrementAndGet() % this.sweepEvery == 0) {
			this.sweeper.execute(this::sweepLogged);
		}
	}

	private void sweepLogged() {
		try {
			sweep();
		}
		catch (RuntimeException ex) {
			logger.warn("Holdfast could not sweep expired lock rows (" + ex.getMessage()
					+ "); the table keeps them until a later sweep succeeds");
		}
	}

	/**
	 * Deletes up to {@value #SWEEP_LIMIT} rows that expired longer than the sweep delay ago.
	 * @return how many rows were deleted
	 */
	int sweep() {
		return this.connections.execute("sweep expired rows", null,
				(dialect, connection) -> dialect.sweep(connection, this.sweepAfterMicros, SWEEP_LIMIT));
	}

	/** Sweeps after every {@code releases}th release instead; for tests. */
	void sweepEvery(int releases) {
		this.sweepEvery = releases;
	}

}
