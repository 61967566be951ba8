package dev.holdfast.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;

import dev.holdfast.test.LeadershipContractTests;
import dev.holdfast.test.server.MariaDbServer;

/**
 * The contracts on a real MariaDB server.
 */
class MariaDbJdbcContractTests extends JdbcContractTests implements LeadershipContractTests {

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
	public boolean followersWakeOnReleases() {
		return false;
	}

}
