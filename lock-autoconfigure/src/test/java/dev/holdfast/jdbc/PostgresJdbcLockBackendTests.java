package dev.holdfast.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;

import dev.holdfast.core.LockBackendContractTests;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.testsupport.PostgresServer;

/**
 * The backend contract on a real PostgreSQL server.
 */
class PostgresJdbcLockBackendTests extends LockBackendContractTests {

	@BeforeAll
	static void createSchema() {
		try (HikariDataSource dataSource = PostgresServer.shared().newDataSource()) {
			AbstractJdbcBackendTests.createSchema(dataSource, "postgresql");
		}
	}

	@Override
	protected LockBackend newBackend() {
		return new PooledJdbcLockBackend(PostgresServer.shared().newDataSource());
	}

}
