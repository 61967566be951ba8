package dev.holdfast.autoconfigure;

import java.sql.SQLException;
import java.time.Duration;

import javax.sql.DataSource;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.jdbc.EmbeddedDatabaseConnection;
import org.springframework.boot.jdbc.init.DatabaseInitializationProperties;
import org.springframework.boot.sql.autoconfigure.init.OnDatabaseInitializationCondition;
import org.springframework.boot.sql.init.dependency.DatabaseInitializationDependencyConfigurer;
import org.springframework.boot.sql.init.dependency.DependsOnDatabaseInitialization;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.core.NestedExceptionUtils;
import org.springframework.core.env.Environment;
import org.springframework.jdbc.CannotGetJdbcConnectionException;
import org.springframework.jdbc.core.JdbcOperations;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.jdbc.HoldfastDataSource;
import dev.holdfast.jdbc.JdbcLockBackend;
import dev.holdfast.spi.LockBackend;

/**
 * The JDBC backend on the application's {@link DataSource}, or on the one marked
 * {@link HoldfastDataSource @HoldfastDataSource}. The lock table is created as
 * {@code holdfast.jdbc.initialize-schema} says and checked at startup.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnClass({ JdbcOperations.class, DatabaseInitializationProperties.class })
@ConditionalOnBackend(BackendType.JDBC)
@ConditionalOnMissingBean(LockBackend.class)
@EnableConfigurationProperties(HoldfastJdbcProperties.class)
@Import(DatabaseInitializationDependencyConfigurer.class)
class JdbcBackendConfiguration {

	private static final Log logger = LogFactory.getLog(JdbcBackendConfiguration.class);

	@Bean
	@DependsOnDatabaseInitialization
	JdbcLockBackend holdfastLockBackend(@HoldfastDataSource ObjectProvider<DataSource> holdfastDataSource,
			ObjectProvider<DataSource> dataSource, HoldfastJdbcProperties properties,
			HoldfastProperties holdfastProperties, Environment environment) {
		DataSource locks = lockDataSource(holdfastDataSource, dataSource);
		if (!environment.containsProperty(OnBackendCondition.PROPERTY) && EmbeddedDatabaseConnection.isEmbedded(locks)) {
			// Chosen because a DataSource exists, and that DataSource is an in-memory database that
			// lives in this JVM (Boot's default without spring.datasource.url): like the memory backend.
			logger.warn("Holdfast keeps locks in the jdbc backend on an in-memory database of this JVM: they are "
					+ "local to this JVM and do not exclude other instances. Configure a shared database "
					+ "(spring.datasource.url) or another backend, or set holdfast.backend=jdbc (or memory) to "
					+ "silence this warning.");
		}
		return backend(locks, properties, holdfastProperties);
	}

	/**
	 * The jdbc backend of {@code holdfast.backends.<name>}, built as the default one; its lock
	 * table is created first as its {@code initialize-schema} says.
	 */
	static JdbcLockBackend named(NamedBackend named) {
		DataSource locks = named.client(DataSource.class);
		HoldfastJdbcProperties properties = named.settings(HoldfastJdbcProperties.class);
		try {
			new HoldfastJdbcDataSourceScriptDatabaseInitializer(locks, properties).initializeDatabase();
		}
		catch (RuntimeException ex) {
			unreachable(ex, named.holdfast().isFailFast());
		}
		return backend(locks, properties, named.holdfast());
	}

	private static JdbcLockBackend backend(DataSource locks, HoldfastJdbcProperties properties,
			HoldfastProperties holdfastProperties) {
		Duration queryTimeout = properties.getQueryTimeout();
		if (queryTimeout == null || queryTimeout.isNegative() || queryTimeout.isZero()) {
			throw new LockConfigurationException(
					"holdfast.jdbc.query-timeout is " + queryTimeout + ": lock statements need a positive timeout.",
					"Set holdfast.jdbc.query-timeout to a positive duration such as 5s, or remove it.");
		}
		JdbcLockBackend backend = new JdbcLockBackend(locks, properties.getTableName(), queryTimeout,
				properties.getSweepAfter());
		backend.setReleaseEvents(properties.isReleaseEvents());
		backend.setFairHandoff(properties.isFairHandoff());
		try {
			backend.checkTable();
		}
		catch (RuntimeException ex) {
			unreachable(ex, holdfastProperties.isFailFast());
			logger.info("Holdfast did not check its lock table '" + backend.getTableName() + "' at startup, nor "
					+ "create it where holdfast.jdbc.initialize-schema asks for it: the database did not answer. "
					+ "Until a startup with the database up, a missing table fails the locks and the health check.");
			return backend;
		}
		checkKeyLength(backend, holdfastProperties.getMaxKeyLength());
		return backend;
	}

	/**
	 * Rethrows {@code ex} unless it says that the database could not be reached (no connection,
	 * or none that answers); if it does, fails the startup with {@code holdfast.fail-fast} as
	 * for every backend ({@link LockBackendStartup#unreachable}), and otherwise returns: the
	 * startup goes on and its probe logs the WARN.
	 */
	static void unreachable(RuntimeException ex, boolean failFast) {
		boolean unreachable = false;
		for (Throwable cause = ex; cause != null && !unreachable; cause = cause.getCause()) {
			unreachable = cause instanceof CannotGetJdbcConnectionException || cause instanceof LockBackendException
					|| cause instanceof SQLException;
		}
		if (!unreachable || ex instanceof LockConfigurationException) {
			throw ex;
		}
		if (failFast) {
			Throwable cause = NestedExceptionUtils.getMostSpecificCause(ex);
			throw LockBackendStartup.unreachable("jdbc",
					"could not use the database: " + ((cause != ex) ? cause.getMessage() : ex.getMessage()));
		}
	}

	/**
	 * Fails when keys as long as {@code holdfast.max-key-length} would not fit the table's
	 * {@code lock_key} column: such locks would fail at the call, only for long keys.
	 */
	static void checkKeyLength(JdbcLockBackend backend, int maxKeyLength) {
		int column = backend.keyColumnLength();
		if (column > 0 && maxKeyLength > column) {
			throw new LockConfigurationException("holdfast.max-key-length is " + maxKeyLength
					+ ", but the lock_key column of the lock table '" + backend.getTableName() + "' holds at most "
					+ column + " characters: locks with longer keys would fail at the call.",
					"Set holdfast.max-key-length to at most " + column
							+ " (longer keys are then shortened with a hash), or widen the lock_key column.");
		}
	}

	@Bean
	@ConditionalOnMissingBean
	@Conditional(OnHoldfastJdbcInitializationCondition.class)
	@Nullable HoldfastJdbcDataSourceScriptDatabaseInitializer holdfastJdbcDataSourceScriptDatabaseInitializer(
			@HoldfastDataSource ObjectProvider<DataSource> holdfastDataSource, ObjectProvider<DataSource> dataSource,
			HoldfastJdbcProperties properties, HoldfastProperties holdfastProperties) {
		try {
			return new HoldfastJdbcDataSourceScriptDatabaseInitializer(lockDataSource(holdfastDataSource, dataSource),
					properties);
		}
		catch (RuntimeException ex) {
			// It asks the database which scripts apply; one that does not answer gets none (the
			// lock backend's table check says so once more).
			unreachable(ex, holdfastProperties.isFailFast());
			return null;
		}
	}

	private static DataSource lockDataSource(ObjectProvider<DataSource> holdfastDataSource,
			ObjectProvider<DataSource> dataSource) {
		DataSource qualified = holdfastDataSource.getIfAvailable();
		if (qualified != null) {
			return qualified;
		}
		DataSource unique = dataSource.getIfUnique();
		if (unique != null) {
			return unique;
		}
		if (dataSource.stream().findAny().isPresent()) {
			throw new LockConfigurationException(
					"Holdfast's JDBC backend found several DataSource beans and cannot tell which holds the locks.",
					"Mark one DataSource @Primary, or mark the one for locks @HoldfastDataSource.");
		}
		throw new LockConfigurationException("holdfast.backend=jdbc is set, but there is no DataSource bean.",
				"Configure a DataSource (for example spring.datasource.url), or choose another holdfast.backend "
						+ "(redis, redlock, memory).");
	}

	static class OnHoldfastJdbcInitializationCondition extends OnDatabaseInitializationCondition {

		OnHoldfastJdbcInitializationCondition() {
			super("Holdfast JDBC", "holdfast.jdbc.initialize-schema");
		}

	}

}
