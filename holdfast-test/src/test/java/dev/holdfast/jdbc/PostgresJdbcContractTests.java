package dev.holdfast.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;

import dev.holdfast.test.LeadershipContractTests;
import dev.holdfast.test.server.PostgresServer;

/**
 * The contracts on a real PostgreSQL server, with the backend's defaults (fair handoff on).
 */
class PostgresJdbcContractTests extends JdbcContractTests implements LeadershipContractTests {

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
	public boolean wakesOnAnotherSlotsRelease() {
		return true;
	}

}
