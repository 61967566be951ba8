package dev.holdfast.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;

import dev.holdfast.testsupport.MariaDbServer;

/**
 * {@link JdbcLockBackend} on a real MariaDB server.
 */
class MariaDbJdbcBackendTests extends AbstractJdbcBackendTests {

	@BeforeAll
	static void createSchema() {
		try (HikariDataSource dataSource = MariaDbServer.shared().newDataSource()) {
			createSchema(dataSource, "mariadb");
		}
	}

	@Override
	protected HikariDataSource newDataSource() {
		return MariaDbServer.shared().newDataSource();
	}

	@Override
	protected String farSessionTimeZoneSql() {
		return "SET time_zone = '+13:00'";
	}

	@Override
	protected String platform() {
		return "mariadb";
	}

}
