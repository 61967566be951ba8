package dev.holdfast.jdbc;

import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import dev.holdfast.core.LockBackendContractTests;
import dev.holdfast.spi.LockBackend;

/**
 * The backend contract on H2, every client with its own pool on one named in-memory database.
 */
class H2JdbcLockBackendTests extends LockBackendContractTests {

	private static final String URL = "jdbc:h2:mem:holdfast-contract-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";

	private static HikariDataSource keeper;

	@BeforeAll
	static void createDatabase() {
		keeper = H2JdbcBackendTests.h2(URL);
		AbstractJdbcBackendTests.createSchema(keeper, "h2");
	}

	@AfterAll
	static void dropDatabase() {
		keeper.close();
	}

	@Override
	protected LockBackend newBackend() {
		return new PooledJdbcLockBackend(H2JdbcBackendTests.h2(URL));
	}

}
