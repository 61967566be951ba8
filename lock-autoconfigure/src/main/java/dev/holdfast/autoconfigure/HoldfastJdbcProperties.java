package dev.holdfast.autoconfigure;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.jdbc.init.DatabaseInitializationProperties;

import dev.holdfast.jdbc.JdbcLockBackend;

/**
 * Configuration of Holdfast's JDBC backend. Schema initialization works as Spring Boot's own
 * JDBC schemas do: {@code holdfast.jdbc.initialize-schema} = {@code embedded} (default),
 * {@code always} or {@code never}.
 */
@ConfigurationProperties("holdfast.jdbc")
public class HoldfastJdbcProperties extends DatabaseInitializationProperties {

	/**
	 * Name of the lock table: letters, digits and underscores, optionally qualified by a schema
	 * name. Schema initialization with the shipped scripts creates the table of this name.
	 */
	private String tableName = "holdfast_lock";

	/**
	 * Longest time one lock statement may wait for the database's answer before the call fails
	 * and its connection is given up.
	 */
	private Duration queryTimeout = Duration.ofSeconds(5);

	/**
	 * How long a lock row stays after it expired or was released before it is deleted. Released
	 * rows keep their fencing token so that the next holder's token is larger; at least one
	 * minute and ten times the query timeout.
	 */
	private Duration sweepAfter = Duration.ofHours(1);

	/**
	 * Whether the backend listens for lock releases on PostgreSQL (LISTEN/NOTIFY), so that
	 * waiters wake when a lock is released instead of polling. Listening keeps one connection
	 * of the pool for as long as locks are awaited; it needs session-level connections (not a
	 * transaction pooler). Other databases always poll.
	 */
	private boolean releaseEvents = true;

	/**
	 * Whether, on PostgreSQL with release events, a release of a lock that threads of this
	 * instance and of another instance wait for reserves it for one of the two, drawn with equal
	 * chances (a fair share of handoffs between instances), instead of letting the first attempt
	 * take it. A handoff to another instance then waits for two round trips (the release that
	 * announces, then the claim); off, the releasing instance's own waiters win most handoffs.
	 */
	private boolean fairHandoff = true;

	public String getTableName() {
		return this.tableName;
	}

	public void setTableName(String tableName) {
		this.tableName = tableName;
	}

	public Duration getQueryTimeout() {
		return this.queryTimeout;
	}

	public void setQueryTimeout(Duration queryTimeout) {
		this.queryTimeout = queryTimeout;
	}

	public Duration getSweepAfter() {
		return this.sweepAfter;
	}

	public void setSweepAfter(Duration sweepAfter) {
		this.sweepAfter = sweepAfter;
	}

	public boolean isFairHandoff() {
		return this.fairHandoff;
	}

	public void setFairHandoff(boolean fairHandoff) {
		this.fairHandoff = fairHandoff;
	}

	public boolean isReleaseEvents() {
		return this.releaseEvents;
	}

	public void setReleaseEvents(boolean releaseEvents) {
		this.releaseEvents = releaseEvents;
	}

	@Override
	public String getDefaultSchemaLocation() {
		return JdbcLockBackend.SCHEMA_LOCATION;
	}

}
