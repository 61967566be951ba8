package dev.holdfast.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;

import dev.holdfast.core.LockBackendContractTests;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.testsupport.MariaDbServer;

/**
 * The backend contract on a real MariaDB server.
 */
class MariaDbJdbcLockBackendTests extends LockBackendContractTests {

	@BeforeAll
	static void createSchema() {
		try (HikariDataSource dataSource = MariaDbServer.shared().newDataSource()) {
			AbstractJdbcBackendTests.createSchema(dataSource, "mariadb");
		}
	}

	@Override
	protected LockBackend newBackend() {
		return new PooledJdbcLockBackend(MariaDbServer.shared().newDataSource());
	}

}
