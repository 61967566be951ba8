package dev.holdfast.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;

import dev.holdfast.testsupport.PostgresServer;

/**
 * {@link JdbcLockBackend} on a real PostgreSQL server.
 */
class PostgresJdbcBackendTests extends AbstractJdbcBackendTests {

	@BeforeAll
	static void createSchema() {
		try (HikariDataSource dataSource = PostgresServer.shared().newDataSource()) {
			createSchema(dataSource, "postgresql");
		}
	}

	@Override
	protected HikariDataSource newDataSource() {
		return PostgresServer.shared().newDataSource();
	}

	@Override
	protected String farSessionTimeZoneSql() {
		return "SET TIME ZONE 'Pacific/Kiritimati'";
	}

	@Override
	protected String platform() {
		return "postgresql";
	}

}
