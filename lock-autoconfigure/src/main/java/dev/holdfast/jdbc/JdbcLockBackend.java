package dev.holdfast.jdbc;

import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;

import org.springframework.util.Assert;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AnnouncedReleases;
import dev.holdfast.spi.BackendHealth;
import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.KeySetAcquisition;
import dev.holdfast.spi.KeySetAcquisition.FirstTaken;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.SharedLocks;
import dev.holdfast.spi.TickClaims;

/**
 * Locks in one table of a relational database, one row per held lock.
 * <ul>
 * <li><b>Not reentrant</b>: a held key refuses whoever asks; reentrancy is the engine's.</li>
 * <li><b>Clock</b>: the database's clock alone decides expiry, computed and compared in SQL in
 * microseconds since the Unix epoch; the JVM sends durations only.</li>
 * <li><b>Statements</b>: acquisition is one statement that takes the row only if it is absent or
 * expired (PostgreSQL and H2, plus a read of the holder's remaining time when the lock is held;
 * MySQL and MariaDB add a second autocommit statement that reads the fencing token, because
 * neither returns the row of an upsert). Release is one owner-checked {@code UPDATE} that
 * expires the row in place: it clears the owner, sets the expiry to the database's current time
 * and keeps the fencing token. Renewal updates all due leases, owner-checked, in one statement
 * on PostgreSQL and in one {@code UPDATE} plus one {@code SELECT} elsewhere.</li>
 * <li><b>Sweep</b>: rows stay after release so that the next holder continues from their token;
 * every 500th release sweeps, off its thread, up to 500 rows expired longer than the sweep delay
 * ago ({@link JdbcSweeper}, JDB-4). The table holds the keys used within the sweep delay.</li>
 * <li><b>Transactions</b>: every statement runs on a connection taken from the pool for it, in
 * autocommit mode, never in a transaction of the caller (whose commit would keep rows locked):
 * each operation needs one extra pooled connection for a statement. Statements run
 * at {@code READ COMMITTED}: where the pool hands out connections at a stricter level
 * ({@code REPEATABLE READ} or {@code SERIALIZABLE}; on MySQL and MariaDB only
 * {@code SERIALIZABLE}), the connection is switched for the call and switched back. A statement
 * the database aborts as a serialization failure or deadlock ({@code 40001}, {@code 40P01})
 * runs again after a short jittered pause, up to five times in all.</li>
 * <li><b>Waiting</b>: on PostgreSQL with its driver ({@link AnnouncedReleases}), a refused
 * attempt marks the holder's row with its backend instance, and the release of a marked row
 * notifies the table's channel with the key ({@code pg_notify}, delivered at the commit), heard on
 * one pooled connection while subscribers listen; else (lost, other databases) the engine polls,
 * never past the holder's remaining time, which the backend reports. With {@linkplain #setFairHandoff fair handoff} (on by default), a release
 * that threads of this instance and of the instance refused last wait for reserves the lock for
 * one of the two, drawn, for 100 ms ({@link #releaseWanted}).</li>
 * <li><b>Fencing tokens</b>: a new row gets the database clock in microseconds; a row taken over
 * after expiry or release gets {@code GREATEST(previous + 1, clock)}, under the row's lock, so
 * tokens increase strictly while the row exists. A deleted row (swept, or by an operator) restarts
 * at the clock, above every token issued more than the sweep delay ago (ten query timeouts at
 * least), unless the database clock steps backwards (docs/decisions/0025).</li>
 * <li><b>Read holds</b> ({@link SharedLocks}): rows beside the record, each operation one transaction
 * that locks the record first ({@link JdbcSharedLocks}, RWL-30 to RWL-39).</li>
 * <li><b>Several keys</b>: one statement on PostgreSQL, all or none or the first free ({@link PostgresKeySets}).</li>
 * <li><b>Tick claims</b> ({@link TickClaims}): a job's last claimed tick is the row at the job's
 * lock key followed by {@value JdbcKeys#TICK_SUFFIX} (lock keys have no <code>{</code>), with an empty owner
 * (no release or renewal matches it) and the tick in microseconds in {@code fence}, moved forward
 * only, under the row's lock: one statement on PostgreSQL and H2, an {@code UPDATE} plus, when that
 * matched nothing, an {@code INSERT} elsewhere; swept as any other row.</li>
 * <li><b>Failures</b>: a database that cannot be reached, stops answering for longer than the
 * configured timeout (a network timeout on the connection), or reports an error makes the call
 * throw {@link LockBackendException}; a failed call may or may not have taken effect. Nothing
 * but an aborted statement is retried and nothing is cached, so the backend works again as soon as
 * the database does. Every statement, the startup and health checks and the detection of the
 * database included, is bounded by the network timeout; a pooled connection, by the pool's.</li>
 * </ul>
 * The table is {@code holdfast_lock} unless configured; its schema per database ships in this
 * jar as {@code dev/holdfast/jdbc/schema-<platform>.sql}.
 */
public class JdbcLockBackend
		implements LockBackend, LeaseRenewal, AnnouncedReleases, BackendHealth, TickClaims, ClusterLocks, KeySetAcquisition,
		SharedLocks, AutoCloseable {

	/** The table used unless another is configured. */
	public static final String DEFAULT_TABLE_NAME = "holdfast_lock";

	/** Where the schema scripts are, with Spring Boot's {@code @@platform@@} placeholder. */
	public static final String SCHEMA_LOCATION = "classpath:dev/holdfast/jdbc/schema-@@platform@@.sql";

	private static final Pattern TABLE_NAME = Pattern
		.compile("[A-Za-z_][A-Za-z0-9_]{0,62}(\\.[A-Za-z_][A-Za-z0-9_]{0,62})?");

	/** How long a row stays after it expired unless configured. */
	public static final Duration DEFAULT_SWEEP_AFTER = Duration.ofHours(1);

	private final String tableName;

	private final JdbcConnections connections;

	private final JdbcSweeper sweeper;

	/**
	 * This backend's instance id (12 random hexadecimal digits): what a mark of a refused attempt
	 * names, and for whom a release reserves a lock, on PostgreSQL.
	 */
	private final String instance = HexFormat.of().toHexDigits(ThreadLocalRandom.current().nextLong())
		.substring(16 - PostgreSqlDialect.INSTANCE_LENGTH);

	/** Draws, at a release that reserves the lock, whether this instance goes first. */
	private volatile BooleanSupplier localFirst = () -> ThreadLocalRandom.current().nextBoolean();

	private final PostgresReleaseEvents releaseEvents;

	private final JdbcSharedLocks shared;

	/** Whether releases draw the next instance on PostgreSQL; set before the first statement. */
	private volatile boolean fairHandoff = true;

	private volatile int keyColumnLength;

	/**
	 * A backend on {@code dataSource} with the default table, a query timeout of 5 seconds and
	 * the default sweep delay.
	 */
	public JdbcLockBackend(DataSource dataSource) {
		this(dataSource, DEFAULT_TABLE_NAME, Duration.ofSeconds(5));
	}

	/**
	 * A backend on {@code dataSource} with the {@linkplain #DEFAULT_SWEEP_AFTER default sweep
	 * delay}.
	 * @see #JdbcLockBackend(DataSource, String, Duration, Duration)
	 */
	public JdbcLockBackend(DataSource dataSource, String tableName, Duration queryTimeout) {
		this(dataSource, tableName, queryTimeout, DEFAULT_SWEEP_AFTER);
	}

	/**
	 * A backend on {@code dataSource}.
	 * @param dataSource where the lock table is; connections are taken from it for each
	 * statement, never from a transaction of the caller
	 * @param tableName the lock table, an SQL identifier optionally qualified by a schema
	 * @param queryTimeout the longest a statement may wait for the database's answer (at most an
	 * hour); the connection is then given up and the call fails. With a driver that has no
	 * network timeout, a statement timeout two seconds longer applies instead
	 * @param sweepAfter how long a row stays after it expired or was released before it may be
	 * deleted; at least a minute and at least ten times {@code queryTimeout}
	 * @throws LockConfigurationException if {@code tableName} is not a plain SQL identifier or
	 * {@code sweepAfter} is too short
	 */
	public JdbcLockBackend(DataSource dataSource, String tableName, Duration queryTimeout, Duration sweepAfter) {
		Assert.notNull(dataSource, "'dataSource' must not be null");
		Assert.isTrue(!queryTimeout.isNegative() && !queryTimeout.isZero(), "'queryTimeout' must be positive");
		this.tableName = validateTableName(tableName);
		this.connections = new JdbcConnections(dataSource, this.tableName, queryTimeout, this.instance);
		this.sweeper = new JdbcSweeper(this.connections, JdbcSweeper.validate(sweepAfter, queryTimeout));
		this.releaseEvents = new PostgresReleaseEvents(this.connections, this.instance);
		this.shared = new JdbcSharedLocks(this.connections);
	}

	/**
	 * Returns {@code tableName} if it is a valid lock table name: letters, digits and
	 * underscores, not starting with a digit, at most 63 characters, optionally preceded by a
	 * schema name of the same form and a dot.
	 * @throws LockConfigurationException naming the value and the property to change otherwise
	 */
	public static String validateTableName(@Nullable String tableName) {
		if (tableName == null || !TABLE_NAME.matcher(tableName).matches()) {
			throw new LockConfigurationException(
					"The lock table name '" + tableName + "' (holdfast.jdbc.table-name) is not a plain SQL identifier.",
					"Set holdfast.jdbc.table-name to letters, digits and underscores, not starting with a digit,"
							+ " at most 63 characters, optionally qualified by a schema (for example 'locks.holdfast_lock').");
		}
		return tableName;
	}

	@Override
	public String name() {
		return "jdbc";
	}

	/** The lock table this backend uses. */
	public String getTableName() {
		return this.tableName;
	}

	/**
	 * Checks that the lock table exists with the expected columns, bounded by the query timeout
	 * like every other call.
	 * @throws LockConfigurationException naming the schema script to run if it does not
	 * @throws LockBackendException if the database cannot be reached or does not answer in time
	 */
	public void checkTable() {
		this.connections.execute("check the lock table '" + this.tableName + "'", null, (dialect, connection) -> {
			try {
				this.keyColumnLength = dialect.checkTable(connection);
			}
			catch (SQLException ex) {
				if (JdbcConnections.isConnectionFailure(ex, connection)) {
					throw ex;
				}
				String script = SCHEMA_LOCATION.replace("@@platform@@", dialect.platform());
				throw new LockConfigurationException(
						"The lock table '" + this.tableName + "' is missing or lacks Holdfast's columns in "
								+ connection.getMetaData().getDatabaseProductName() + ": " + ex.getMessage(),
						"Create it with the script " + script + " (shipped in lock-autoconfigure"
								+ (DEFAULT_TABLE_NAME.equals(this.tableName) ? ""
										: ", with holdfast_lock replaced by " + this.tableName)
								+ "), or set holdfast.jdbc.initialize-schema=always to let Holdfast create it at startup.");
			}
			return null;
		});
	}

	/**
	 * The length of the table's {@code lock_key} column, as the last {@link #checkTable()} read
	 * it from the driver; 0 before that or when the driver does not say.
	 */
	public int keyColumnLength() {
		return this.keyColumnLength;
	}

	/**
	 * Runs the startup table check again, bounded by the query timeout: up when the database
	 * answers and the lock table has Holdfast's columns. Details: the database product and the table.
	 * @throws LockBackendException if the database cannot be reached, does not answer in time,
	 * or the table is missing
	 */
	@Override
	public Check checkHealth() {
		return this.connections.execute("check the lock table", null, (dialect, connection) -> {
			dialect.checkTable(connection);
			Map<String, Object> details = new LinkedHashMap<>();
			details.put("database", connection.getMetaData().getDatabaseProductName());
			details.put("table", this.tableName);
			return Check.up(details);
		});
	}

	/**
	 * Takes the lock if its row is absent or expired on the database clock, in one statement.
	 * When held, reports the holder's remaining time as measured by the database (on PostgreSQL
	 * and H2 with a second statement).
	 */
	@Override
	public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
		JdbcKeys.checkLockKey(key);
		Assert.hasLength(owner, "'owner' must not be empty");
		long ttlMicros = Math.multiplyExact(ttl.toMillis(), 1000);
		return this.connections.execute("acquire lock", key,
				(dialect, connection) -> dialect.acquire(connection, key, owner, ttlMicros, this.connections.holder()));
	}

	/** A read hold, in one transaction that locks the record row first (RWL-30). */
	@Override
	public AcquireResult tryAcquireShared(String key, String owner, Duration ttl, Duration recordFor) {
		JdbcKeys.checkLockKey(key);
		return this.shared.tryAcquire(key, owner, ttl, recordFor);
	}

	/** The plain attempt; refused, it stamps a waiting writer if the key is read-held (RWL-34). */
	@Override
	public AcquireResult tryAcquireAsWaitingWriter(String key, String owner, Duration ttl, Duration recordFor) {
		return this.shared.stampIfRefused(tryAcquire(key, owner, ttl), key, recordFor);
	}

	@Override
	public Set<String> renewShared(Collection<HeldLock> holds) {
		return this.shared.renew(holds);
	}

	/** On PostgreSQL, once the first statement told which database this is (MKY-6). */
	@Override
	public boolean acquiresKeySets() {
		return this.connections.dialect() instanceof PostgreSqlDialect;
	}

	@Override
	public long @Nullable [] tryAcquireAll(List<HeldLock> locks) {
		return PostgresKeySets.execute(this.connections, "acquire", locks, PostgresKeySets::acquireAll);
	}

	@Override
	public @Nullable FirstTaken tryAcquireFirst(List<HeldLock> locks) {
		return PostgresKeySets.execute(this.connections, "acquire the first free of", locks, PostgresKeySets::acquireFirst);
	}

	/**
	 * Expires the lock's row now on the database clock and clears its owner if {@code owner}
	 * holds it, in one statement; the row keeps its fencing token for the next holder.
	 */
	@Override
	public boolean release(String key, String owner) {
		return release(key, owner, (dialect, connection) -> dialect.release(connection, key, owner));
	}

	/**
	 * Releases the lock if {@code owner} holds it, for a thread of this process that wants the key:
	 * with {@linkplain #setFairHandoff fair handoff} on PostgreSQL, when another backend instance's
	 * refused attempt marked the row, the lock is reserved, for a claim window of 100 ms on the
	 * database clock, for this instance or that one, drawn with equal chances; only an acquisition
	 * of the drawn instance takes it within the window.
	 * A reservation for the other instance is announced to that instance's waiters only; one for
	 * this instance is not announced (the engine wakes its racer with the answer). A row that no
	 * other instance marked is released as {@link #release} releases it. A reservation is nobody's
	 * lock: no owner renews or releases it. Otherwise the plain release.
	 */
	@Override
	public boolean releaseWanted(String key, String owner) {
		if (!this.fairHandoff) {
			return release(key, owner);
		}
		boolean localFirst = this.localFirst.getAsBoolean();
		return release(key, owner, (dialect, connection) -> dialect.releaseWanted(connection, key, owner, localFirst));
	}

	private boolean release(String key, String owner, JdbcConnections.SqlWork<Boolean> release) {
		Assert.hasLength(owner, "'owner' must not be empty");
		boolean released = this.connections.execute("release lock", key, release) || this.shared.release(key, owner);
		this.sweeper.released();
		return released;
	}

	/** A query of the live rows under {@code prefix}, at most {@code max}, by the database clock. */
	@Override
	public Listing listLocks(String prefix, int max) {
		return this.connections.execute("list locks", null, (dialect, c) -> JdbcClusterLocks.list(dialect, c, prefix, max));
	}

	/** Expires the held row in place whoever holds it, as a release does: the token stays. */
	@Override
	public boolean forceRelease(String key, @Nullable Long token) {
		return this.connections.execute("force release", key, (d, c) -> JdbcClusterLocks.forceRelease(d, c, key, token));
	}

	/** The tick in the job's live record row, by the database clock. */
	@Override
	public @Nullable Instant lastClaimedTick(String key) {
		return this.connections.execute("read tick", key, (d, c) -> JdbcClusterLocks.lastTick(d, c, JdbcKeys.tickRecordKey(key)));
	}

	/**
	 * Claims {@code tick} in the job's record row ({@link JdbcKeys#tickRecordKey}) if it is due by the
	 * database clock within {@code tolerance}; the record then expires {@code ttl} from now on
	 * that clock. H2, MySQL and MariaDB read the database's time of the answer with one more query.
	 * @throws IllegalArgumentException if the key contains <code>{</code> or the ttl is below 1 ms
	 * @throws LockBackendException if the database cannot be reached or reports an error
	 */
	@Override
	public TickClaim claimTick(String key, Instant tick, Duration tolerance, Duration ttl) {
		JdbcKeys.checkLockKey(key);
		Assert.isTrue(ttl.toMillis() >= 1, () -> "Time to live of the tick claim of '" + key + "' must be at least 1ms");
		long tickMicros = Math.addExact(Math.multiplyExact(tick.getEpochSecond(), 1_000_000L), tick.getNano() / 1000);
		long toleranceMicros = Math.multiplyExact(tolerance.toMillis(), 1000);
		long ttlMicros = Math.multiplyExact(ttl.toMillis(), 1000);
		String record = JdbcKeys.tickRecordKey(key);
		return this.connections.execute("claim tick " + tick + " of lock '" + key + "'", null,
				(dialect, connection) -> dialect.claimTick(connection, record, tickMicros, toleranceMicros, ttlMicros,
						this.connections.holder()));
	}

	/** Sets each lock's expiry to its TTL from now where its owner holds it (never an expired one). */
	@Override
	public Set<String> renew(Collection<HeldLock> locks) {
		if (locks.isEmpty()) {
			return Set.of();
		}
		return this.connections.execute("renew " + locks.size() + " lock(s)", null,
				(dialect, connection) -> dialect.renew(connection, locks));
	}

	/** The sweeps of long-expired rows; for tests. */
	JdbcSweeper sweeper() {
		return this.sweeper;
	}

	/** This backend's instance id; for tests. */
	String instance() {
		return this.instance;
	}

	/** Replaces the draw of {@link #releaseWanted}; for tests. */
	void localFirst(BooleanSupplier localFirst) {
		this.localFirst = localFirst;
	}

	/**
	 * Whether this backend listens for lock releases on PostgreSQL (on by default): one
	 * connection of the pool is kept for {@code LISTEN} while locks are awaited, and waiters wake
	 * on release. Off, waiters poll and no connection is kept. Set before the backend is used.
	 */
	public void setReleaseEvents(boolean releaseEvents) {
		this.releaseEvents.setEnabled(releaseEvents);
	}

	/**
	 * Whether a release for which threads of this instance and of another backend instance wait
	 * reserves the lock for one of the two, drawn (on by default, as
	 * {@code holdfast.jdbc.fair-handoff} in the auto-configuration): see {@link #releaseWanted}.
	 * Only on PostgreSQL with release events; set before use. Instances with it on and off share a
	 * table safely, not fairly (one off never hands a release on; the others give away half).
	 */
	public void setFairHandoff(boolean fairHandoff) {
		this.fairHandoff = fairHandoff;
	}

	/** Whether releases draw the next instance; see {@link #setFairHandoff}. */
	public boolean isFairHandoff() {
		return this.fairHandoff;
	}

	/** Whether this backend may listen for lock releases on PostgreSQL; see {@link #setReleaseEvents}. */
	public boolean isReleaseEvents() {
		return this.releaseEvents.isEnabled();
	}

	/** The listener of announced releases on PostgreSQL, {@code null} elsewhere; for tests. */
	@Nullable PostgresReleaseListener releaseListener() {
		return this.releaseEvents.listener();
	}

	/**
	 * Calls {@code listener} with the key of each lock released after a refused attempt marked it
	 * (on PostgreSQL; elsewhere never). The first call starts the backend's one listening
	 * connection, taken from the pool, in the background: until it listens ({@link #isListening()})
	 * releases are delivered to nobody. The listener runs on the backend's listening thread and
	 * must not block.
	 * @return a handle that stops deliveries to this listener when closed; the listening connection
	 * goes back to the pool when the last one is closed
	 * @throws IllegalStateException if the backend is closed
	 */
	@Override
	public AutoCloseable subscribe(Consumer<String> listener) {
		return subscribe(listener, () -> {
		});
	}

	/**
	 * Subscribes as {@link #subscribe(Consumer)} does; {@code onInterrupted} runs, on the
	 * listening thread, whenever the listening connection is lost or the listening stops.
	 */
	@Override
	public AutoCloseable subscribe(Consumer<String> listener, Runnable onInterrupted) {
		Assert.notNull(listener, "'listener' must not be null");
		Assert.notNull(onInterrupted, "'onInterrupted' must not be null");
		return this.releaseEvents.subscribe(listener, onInterrupted);
	}

	/** Whether the listening connection listens now. */
	@Override
	public boolean isListening() {
		return this.releaseEvents.isListening();
	}

	/**
	 * On PostgreSQL: {@link #releaseWanted} draws the next instance, so the engine need not make a
	 * racer of its own start from an announcement.
	 */
	@Override
	public boolean drawsNextInstance() {
		return this.fairHandoff && this.connections.dialect() instanceof PostgreSqlDialect;
	}

	/**
	 * Whether releases are announced: on PostgreSQL with its driver, except while a lost
	 * listening connection is being replaced; never on other databases, nor before the first
	 * statement told which database this is. Waiters poll otherwise.
	 */
	@Override
	public boolean announcesReleases() {
		return this.releaseEvents.isUsable();
	}

	/**
	 * Closes the listening connection, if any (back to the pool); later subscriptions are refused.
	 * Locks in the table are not touched, and the data source, which belongs to the application,
	 * stays open.
	 */
	@Override
	public void close() {
		this.releaseEvents.close();
	}

	/** How statements run (their dialect, timeouts, the claim window on PostgreSQL); for tests. */
	JdbcConnections connections() {
		return this.connections;
	}

}
