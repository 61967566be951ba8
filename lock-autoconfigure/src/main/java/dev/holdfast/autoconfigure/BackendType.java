package dev.holdfast.autoconfigure;

/**
 * The backends Holdfast can keep locks in, for {@code holdfast.backend}.
 */
public enum BackendType {

	/** Several independent Redis masters, through Redisson clients (Redlock). */
	REDLOCK,

	/** A ZooKeeper ensemble, through Apache Curator. */
	ZOOKEEPER,

	/** Redis, through the application's spring-data-redis connection factory. */
	REDIS,

	/** The application's SQL database, through its DataSource. */
	JDBC,

	/** This JVM's memory: locks are not shared with other processes. */
	MEMORY

}
