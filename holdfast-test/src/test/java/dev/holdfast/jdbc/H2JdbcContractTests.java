package dev.holdfast.jdbc;

import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import dev.holdfast.test.LeadershipContractTests;

/**
 * The contracts on H2, every client with its own pool on one named in-memory database.
 */
class H2JdbcContractTests extends JdbcContractTests implements LeadershipContractTests {

	private static final String URL = "jdbc:h2:mem:holdfast-contract-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";

	private static HikariDataSource keeper;

	@BeforeAll
	static void createDatabase() {
		keeper = h2(URL);
		createSchema(keeper, "h2");
	}

	@AfterAll
	static void dropDatabase() {
		keeper.close();
	}

	@Override
	protected HikariDataSource newDataSource() {
		return h2(URL);
	}

	@Override
	public boolean followersWakeOnReleases() {
		return false;
	}

}
