package dev.holdfast.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Collection;
import java.util.Set;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.core.LockKeys;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.TickClaims.TickClaim;

/**
 * PostgreSQL: acquisition and fencing token in one statement, plus a mark of the holder's row
 * that also reads its remaining time only when the lock is held; a release that reports whether
 * the row was marked, followed by a {@code pg_notify} of its own only then (the release that
 * draws the next instance announces in its own statement); renewal of any number of locks in one statement
 * over arrays ({@link PostgresKeySets}).
 */
final class PostgreSqlDialect extends SqlClockDialect {

	private static final Log logger = LogFactory.getLog(JdbcLockBackend.class);

	/**
	 * The database clock in microseconds since the epoch. {@code date_part} computes in
	 * {@code double precision}, which is exact here: the seconds since the epoch are off by at most
	 * 0.12 µs, and the product by at most 0.25 µs, so rounding to {@code bigint} gives the exact
	 * microsecond until the year 2112 (and is off by at most one microsecond after, monotonically).
	 * {@code EXTRACT} would compute in {@code numeric} since PostgreSQL 14, which costs the server
	 * more per call.
	 */
	private static final String CLOCK = "(date_part('epoch', clock_timestamp()) * 1000000)::bigint";

	/** {@link #CLOCK} read once per statement, as a one-row relation with column {@code us}. */
	private static final String NOW = "(SELECT " + CLOCK + " AS us)";

	private final String acquireSql;

	/** Several rows taken, all or none, in one statement with the rules of {@link #acquireSql}. */
	final PostgresKeySets keySets;

	private final String markSql;

	private final String releaseSql;

	private final String releaseDrawSql;

	/** {@link #releaseDrawSql} and its announcement in one statement; see {@link #releaseWanted}. */
	private final String releaseDrawAnnouncedSql;

	/**
	 * Whether {@link #releaseWanted} announces in its own statement: false after that statement
	 * failed (a full notification queue, no {@code pg_notify}), until an announcement of its own
	 * succeeds again.
	 */
	private volatile boolean announceInRelease = true;

	/** Whether the last announcement failed: only the first of a run of failures is logged at WARN. */
	private volatile boolean notifyFailing;

	private final String channel;

	private final String claimSql;

	/** The backend instance whose attempts this dialect sends. */
	private final String instance;

	/** What an attempt of {@link #instance} claims: a reservation {@code >[<instance>]}. */
	private final String reserved;

	/** What a refused attempt of {@link #instance} writes: the mark {@code *[<instance>]}. */
	private final String mark;

	/**
	 * @param channel the channel of the table's releases
	 * ({@link PostgresReleaseListener#channelOf}): every spelling of one table gets one channel
	 * @param claimWindowMicros how long a release reserves the lock for the drawn instance:
	 * {@link #CLAIM_WINDOW_MICROS} but in tests
	 * @param instance the backend instance whose attempts and releases this dialect sends
	 * ({@value #INSTANCE_LENGTH} hexadecimal digits)
	 */
	PostgreSqlDialect(String table, int queryTimeoutSeconds, String channel, long claimWindowMicros,
			String instance) {
		super(table, queryTimeoutSeconds, CLOCK);
		this.instance = instance;
		this.reserved = RESERVED + "[" + instance + "]";
		this.mark = MARK + "[" + instance + "]";
		// A subquery with a volatile function is not flattened: one "now" for the whole statement,
		// read before the row is locked. The conflict condition sees the latest committed row
		// under its lock; RETURNING gives the row as updated or inserted, and no row when held.
		// Nothing else: a CTE around it, to also report the holder's remaining time in the same
		// statement, made every acquisition cost the server about a fifth more (docs/decisions/0027).
		String takeRow = " ON CONFLICT (lock_key) DO UPDATE SET"
				+ " owner_token = EXCLUDED.owner_token, fence = GREATEST(l.fence + 1, EXCLUDED.fence),"
				+ " expires_at = EXCLUDED.expires_at, acquired_at = EXCLUDED.acquired_at,"
				// A claim of a reservation (a live row) marks the new holder's row for the instance that
				// the release drew against (it waits too), so that this holder's release announces: the
				// reservation '>[<instance>][<other instance>]' gives '*[<other instance>]' + the holder.
				+ " holder = CASE WHEN l.expires_at <= EXCLUDED.acquired_at THEN EXCLUDED.holder"
				+ " ELSE left('" + MARK + "' || substr(l.holder, " + (RESERVED_PREFIX_LENGTH + 1) + ") || EXCLUDED.holder, 255) END"
				// Expired, or reserved for this attempt's instance (parameter 5, '>[<instance>]'). Only
				// a release that reserves (releaseDrawSql) writes a holder that begins with '>', with no
				// owner; every other holder begins with "pid " or '*'. The owner test
				// keeps a live holder's row out of reach whatever its holder text says (the holder
				// format is not what exclusion rests on; review of 305689e). The statement is built,
				// and so paid for, on every acquisition: each node costs the server (issue 19).
				+ " WHERE l.expires_at <= EXCLUDED.acquired_at OR (l.owner_token = '' AND left(l.holder, "
				+ RESERVED_PREFIX_LENGTH + ") = ?)";
		String insert = "INSERT INTO " + table + " AS l (lock_key, owner_token, fence, expires_at, acquired_at, holder)";
		this.acquireSql = insert + " SELECT ?, ?, n.us, n.us + ?, n.us, ? FROM " + NOW + " n" + takeRow + " RETURNING l.fence";
		this.keySets = new PostgresKeySets(table, insert, NOW, takeRow, this.reserved);
		// A refused attempt marks the holder's row (a '*' before the holder's description), so that
		// its release announces itself; under the row's lock, so a release that committed meanwhile
		// is seen (no row: retry at once), never a stale remaining time. The mark names the marking
		// instance ('*[<instance>]', parameters 1 and 2), so that a release can hand the lock to it.
		// A row marked by another instance is marked again, for this one (parameter 4): the last
		// refused instance is the one the next release draws against, so that a third instance is
		// not kept out by two that hand the lock to each other. A row marked by this instance, or
		// reserved ('>'), is not written again (no new row version, no WAL): every mark names its
		// instance ('*[' + 12 digits + ']'). Its remaining time is read instead, and only if it still
		// reads as such; a release racing with that read is then announced, while a row that reads
		// otherwise but was not marked changed meanwhile (no row: retry at once).
		String marked = "left(holder, 1) = '" + MARK + "'";
		String markedByOther = "(" + marked + " AND substr(holder, 3, " + INSTANCE_LENGTH + ") <> ?)";
		this.markSql = "WITH m AS (UPDATE " + table + " SET holder = CASE WHEN " + marked + " THEN left(? || substr(holder, "
				+ (INSTANCE_LENGTH + 4) + "), 255) ELSE left(? || holder, 255) END"
				+ " WHERE lock_key = ? AND expires_at > " + CLOCK + " AND (left(holder, 1) NOT IN ('" + MARK + "', '"
				+ RESERVED + "') OR " + markedByOther + ") RETURNING expires_at) SELECT expires_at - " + CLOCK
				+ " FROM m UNION ALL SELECT expires_at - " + CLOCK + " FROM " + table + " WHERE lock_key = ? AND expires_at > "
				+ CLOCK + " AND left(holder, 1) IN ('" + MARK + "', '" + RESERVED + "') AND NOT " + markedByOther
				+ " AND NOT EXISTS (SELECT 1 FROM m)";
		this.channel = channel;
		// The release reports whether a refused attempt marked the row; the announcement is a
		// statement of its own after it (release()), so that it can never fail the release. The
		// mark stays on the released row: the next acquisition or tick claim writes its own holder.
		// It returns the holder as stored, tested in Java: an expression in RETURNING costs the
		// server more than the few bytes of the column (issue 19).
		this.releaseSql = "UPDATE " + table + " SET owner_token = '', expires_at = LEAST(expires_at, " + CLOCK
				+ ") WHERE lock_key = ? AND owner_token = ? RETURNING holder";
		// The release for an instance a thread of which wants the key (releaseWanted): when another
		// instance marked the row, the lock is reserved for one of the two, drawn by the caller
		// (parameter 3: the releasing instance first), for the claim window; else the plain release.
		// The marking instance is read from the row under the UPDATE's lock, so it is never stale.
		// No backslash in the pattern: it reads the same whatever standard_conforming_strings says.
		String waiter = "NULLIF(substring(l.holder FROM '^[" + MARK + "][[]([0-9a-f]{" + INSTANCE_LENGTH + "})[]]'), ?)";
		this.releaseDrawSql = "UPDATE " + table + " AS l SET owner_token = '', expires_at = CASE WHEN " + waiter
				+ " IS NULL THEN LEAST(l.expires_at, n.us) ELSE n.us + " + claimWindowMicros + " END, holder = CASE WHEN "
				+ waiter + " IS NULL THEN l.holder WHEN ? THEN '" + RESERVED + "[' || ? || '][' || " + waiter + " || ']' ELSE '"
				+ RESERVED + "[' || " + waiter + " || '][' || ? || ']' END FROM " + NOW
				+ " n WHERE l.lock_key = ? AND l.owner_token = ? RETURNING left(l.holder, " + RESERVED_PREFIX_LENGTH + ")";
		// The same, announcing in the same statement (one round trip less before the other
		// instance hears; the notification leaves at the commit of the reservation): a
		// reservation for the other instance (parameter 10) is announced to it, with the key
		// (parameter 11) and the drawn instance, a row marked otherwise with the key alone.
		this.releaseDrawAnnouncedSql = "WITH r AS (" + this.releaseDrawSql + " AS s) SELECT r.s, CASE WHEN left(r.s, 1) = '"
				+ RESERVED + "' AND substr(r.s, 3, " + INSTANCE_LENGTH + ") <> ? THEN pg_notify(?, ? || '{" + RESERVED
				+ "' || substr(r.s, 3, " + INSTANCE_LENGTH + ") || '}') WHEN left(r.s, 1) = '" + MARK
				+ "' THEN pg_notify(?, ?) END FROM r";
		// The conflict condition sees the latest committed record, under its row lock.
		// The tick must be due by the database clock: otherwise the SELECT gives no row to insert.
		this.claimSql = "WITH n AS " + NOW + ", c AS (INSERT INTO " + table
				+ " AS l (lock_key, owner_token, fence, expires_at, acquired_at, holder)"
				+ " SELECT ?, '', ?, n.us + ?, n.us, ? FROM n WHERE abs(n.us - ?) <= ? ON CONFLICT (lock_key) DO UPDATE SET"
				+ " fence = EXCLUDED.fence, expires_at = EXCLUDED.expires_at, acquired_at = EXCLUDED.acquired_at,"
				+ " holder = EXCLUDED.holder WHERE l.fence < EXCLUDED.fence OR l.expires_at <= EXCLUDED.acquired_at"
				+ " RETURNING 1) SELECT (SELECT count(*) FROM c), n.us FROM n";
	}

	/** Begins the holder's description of a row whose release is awaited. */
	static final String MARK = "*";

	/** Begins the holder of a row reserved for an instance ({@code >[<instance>][<other instance>]}). */
	static final String RESERVED = ">";

	/** The length of an instance id ({@link JdbcLockBackend}: hexadecimal digits). */
	static final int INSTANCE_LENGTH = 12;

	/** The length of {@code >[<instance>]}, which tells for whom a row is reserved. */
	static final int RESERVED_PREFIX_LENGTH = INSTANCE_LENGTH + 3;

	/**
	 * How long a release reserves the lock for the drawn instance: its racer, woken by the
	 * announcement (or, in the releasing instance, the release's answer), claims within
	 * milliseconds; a reservation for an instance that stopped waiting
	 * (or whose announcement was lost) keeps the lock idle for no longer than this. A claim after
	 * it is an ordinary race, never a second holder.
	 */
	static final long CLAIM_WINDOW_MICROS = 100_000;

	/** The channel on which releases of awaited locks are announced. */
	String channel() {
		return this.channel;
	}

	/**
	 * Releases the lock if {@code owner} holds it, as everywhere, in one statement; when a refused
	 * attempt marked the row, or the key is a permit slot's (SEM-8), announces the release on
	 * {@link #channel()} with a second statement, after the release committed, whose failure is
	 * logged and never fails the release.
	 */
	@Override
	boolean release(Connection connection, String key, String owner) throws SQLException {
		Boolean marked = releaseMarked(connection, key, owner);
		// A permit slot's release is announced even unmarked: it wakes a call of the semaphore
		// waiting on another slot (SEM-8). Not the check slot #-1, nor a shortened key's.
		if (Boolean.TRUE.equals(marked) || marked != null && isPermitSlot(key)) {
			announce(connection, key);
		}
		return marked != null;
	}

	private static boolean isPermitSlot(String key) {
		Integer slot = LockKeys.slotOf(key);
		return slot != null && slot >= 0;
	}

	/**
	 * The release for {@code instance}, a thread of which wants the key. When another instance
	 * marked the row, the lock is not released to whoever attempts first but reserved, for
	 * {@link #CLAIM_WINDOW_MICROS}, for {@code instance} if {@code localFirst} and for the marking
	 * instance otherwise; only an acquisition of the reserved instance takes it in that window. A
	 * reservation for the other instance is announced, named, so that only that instance's
	 * waiters wake; one for {@code instance} is not (the engine wakes its racer with the answer).
	 */
	@Override
	boolean releaseWanted(Connection connection, String key, String owner, boolean localFirst) throws SQLException {
		if (this.announceInRelease) {
			try (PreparedStatement ps = prepare(connection, this.releaseDrawAnnouncedSql)) {
				bindReleaseDraw(ps, key, owner, localFirst);
				ps.setString(10, this.instance);
				ps.setString(11, this.channel);
				ps.setString(12, key);
				ps.setString(13, this.channel);
				ps.setString(14, key);
				try (ResultSet rs = ps.executeQuery()) {
					return rs.next();
				}
			}
			catch (SQLException ex) {
				if (!announcementFailed(connection, ex)) {
					throw ex;
				}
				// The statement failed as a whole (autocommit): nothing was released. Released
				// below, and announced in a statement of its own, which cannot fail the release.
				this.announceInRelease = false;
				logger.debug("Holdfast's release with its announcement failed; releasing, then announcing on its own", ex);
			}
		}
		String state;
		try (PreparedStatement ps = prepare(connection, this.releaseDrawSql)) {
			bindReleaseDraw(ps, key, owner, localFirst);
			try (ResultSet rs = ps.executeQuery()) {
				if (!rs.next()) {
					return false;
				}
				state = rs.getString(1);
			}
		}
		if (state != null && state.startsWith(RESERVED)) {
			String drawn = state.substring(2, 2 + INSTANCE_LENGTH);
			// Named in the announcement: only the drawn instance's waiters wake (JdbcLockBackend),
			// the others would only be refused. Not announced when the drawn instance is the
			// releasing one: the engine wakes its racer with the answer.
			if (!drawn.equals(this.instance)) {
				announce(connection, reservedPayload(key, drawn));
			}
		}
		else if (state != null && state.startsWith(MARK)) {
			// Marked by this instance.
			announce(connection, key);
		}
		return true;
	}

	private void bindReleaseDraw(PreparedStatement ps, String key, String owner, boolean localFirst)
			throws SQLException {
		ps.setString(1, this.instance);
		ps.setString(2, this.instance);
		ps.setBoolean(3, localFirst);
		ps.setString(4, this.instance);
		ps.setString(5, this.instance);
		ps.setString(6, this.instance);
		ps.setString(7, this.instance);
		ps.setString(8, key);
		ps.setString(9, owner);
	}

	/**
	 * Whether {@code ex}, thrown by the release that announces, is an error that its
	 * {@code pg_notify} can raise ({@link #ANNOUNCEMENT_FAILURES}) on a connection still open:
	 * the statement failed as a whole (autocommit), so nothing was released.
	 */
	private static boolean announcementFailed(Connection connection, SQLException ex) throws SQLException {
		return ANNOUNCEMENT_FAILURES.contains(ex.getSQLState()) && !connection.isClosed();
	}

	/**
	 * The SQLStates that {@code pg_notify} raises: a full notification queue (54000), a channel
	 * or payload too long (22023), no such function (42883), no right to execute it (42501), and
	 * a server that does not support it (0A000). Any other error of the release that announces
	 * (a lock timeout, a lost connection, a serialization failure) is thrown as for any other
	 * statement, and the release is not made again.
	 */
	private static final Set<String> ANNOUNCEMENT_FAILURES = Set.of("54000", "22023", "42883", "42501", "0A000");

	/** Whether {@link #releaseWanted} announces in its own statement now; for tests. */
	boolean announcesInRelease() {
		return this.announceInRelease;
	}

	/**
	 * The payload of the announcement of a lock reserved for {@code instance}: the key, then
	 * <code>{&gt;instance}</code>; lock keys have no brace.
	 */
	static String reservedPayload(String key, String instance) {
		return key + "{" + RESERVED + instance + "}";
	}

	/**
	 * The key of an announcement whose payload is {@code payload}, if it concerns the waiters of
	 * {@code instance}: a plain release concerns every instance, a reservation only the reserved
	 * one; {@code null} otherwise.
	 */
	static @Nullable String keyFor(String payload, String instance) {
		int brace = payload.indexOf("{" + RESERVED);
		if (brace < 0) {
			return payload;
		}
		return payload.regionMatches(brace + 2, instance, 0, instance.length()) ? payload.substring(0, brace) : null;
	}

	/** The release: whether the row was marked, {@code null} if {@code owner} did not hold the lock. */
	private @Nullable Boolean releaseMarked(Connection connection, String key, String owner) throws SQLException {
		try (PreparedStatement ps = prepare(connection, this.releaseSql)) {
			ps.setString(1, key);
			ps.setString(2, owner);
			try (ResultSet rs = ps.executeQuery()) {
				if (!rs.next()) {
					return null;
				}
				String holder = rs.getString(1);
				return holder != null && holder.startsWith(MARK);
			}
		}
	}

	/**
	 * Notifies the listeners of {@link #channel()} of the release of {@code key}. Announcements are
	 * advisory (waiters poll too): a failure (a full notification queue, a PostgreSQL-compatible
	 * database without {@code pg_notify}) is logged, at WARN for the first of a run of failures and
	 * at DEBUG until an announcement succeeds again, and not thrown. (No JVM clock paces the log:
	 * the backend's classes read none, {@code JdbcLockBackendClockTests}.)
	 */
	private void announce(Connection connection, String key) {
		try (PreparedStatement ps = prepare(connection, "SELECT pg_notify(?, ?)")) {
			ps.setString(1, this.channel);
			ps.setString(2, key);
			ps.execute();
			this.notifyFailing = false;
			this.announceInRelease = true;
		}
		catch (SQLException ex) {
			String message = "Holdfast could not announce a lock release on PostgreSQL (" + ex.getMessage()
					+ ", SQLState " + ex.getSQLState() + "); the lock is released, and waiters elsewhere find it by"
					+ " polling";
			if (!this.notifyFailing) {
				this.notifyFailing = true;
				logger.warn(message + ". Further failures are logged at DEBUG until an announcement succeeds", ex);
			}
			else if (logger.isDebugEnabled()) {
				logger.debug(message, ex);
			}
		}
	}

	/** The acquisition statement; for tests. */
	String acquireSql() {
		return this.acquireSql;
	}

	/** One statement: the claim, and the database's time that judged it. */
	@Override
	TickClaim claimTick(Connection connection, String key, long tickMicros, long toleranceMicros, long ttlMicros,
			String holder) throws SQLException {
		try (PreparedStatement ps = prepare(connection, this.claimSql)) {
			ps.setString(1, key);
			ps.setLong(2, tickMicros);
			ps.setLong(3, ttlMicros);
			ps.setString(4, holder);
			ps.setLong(5, tickMicros);
			ps.setLong(6, toleranceMicros);
			try (ResultSet rs = ps.executeQuery()) {
				rs.next();
				return answer(rs.getLong(1) > 0, rs.getLong(2), tickMicros, toleranceMicros);
			}
		}
	}

	@Override
	String platform() {
		return "postgresql";
	}

	/**
	 * One statement takes the lock if its row is absent or expired, or reserved for this
	 * instance; only when that returns no row (held) does a second one mark the holder's row as
	 * awaited by this instance and read the holder's remaining time, which is 0 if the holder
	 * released meanwhile or the row was deleted (retry at once).
	 */
	@Override
	AcquireResult acquire(Connection connection, String key, String owner, long ttlMicros, String holder)
			throws SQLException {
		try (PreparedStatement ps = prepareAcquire(connection, this.acquireSql, key, owner, ttlMicros, holder)) {
			ps.setString(5, this.reserved);
			try (ResultSet rs = ps.executeQuery()) {
				if (rs.next()) {
					return AcquireResult.acquired(rs.getLong(1));
				}
			}
		}
		try (PreparedStatement ps = prepare(connection, this.markSql)) {
			ps.setString(1, this.mark);
			ps.setString(2, this.mark);
			ps.setString(3, key);
			ps.setString(4, this.instance);
			ps.setString(5, key);
			ps.setString(6, this.instance);
			try (ResultSet rs = ps.executeQuery()) {
				return AcquireResult.held(rs.next() ? remainingMillis(rs.getLong(1)) : 0);
			}
		}
	}

	/**
	 * {@link JdbcLockDialect#sweep}, locking its candidates with {@code SKIP LOCKED}: a row another
	 * statement has locked is passed by, never waited for (MKY-6).
	 */
	@Override
	int sweep(Connection connection, long sweepAfterMicros, int limit) throws SQLException {
		return this.keySets.sweep(this, connection, clock(connection) - sweepAfterMicros, limit);
	}

	/** The exclusive upsert's shape, taking the row's lock whether it inserts or not. */
	@Override
	void lockRecord(Connection connection, String key, String holder) throws SQLException {
		update(connection, "INSERT INTO " + this.table + " AS l (lock_key, owner_token, fence, expires_at, acquired_at,"
				+ " holder) SELECT ?, '', n.us, n.us, n.us, ? FROM " + NOW + " n ON CONFLICT (lock_key) DO UPDATE SET"
				+ " fence = l.fence", key, holder);
	}

	/** Announces the release of {@code key}, as a release of a marked row does; never throws. */
	void announceRelease(Connection connection, String key) {
		announce(connection, key);
	}

	@Override
	Set<String> renew(Connection connection, Collection<HeldLock> locks) throws SQLException {
		return this.keySets.renew(this, connection, locks);
	}

}
