package dev.holdfast.jdbc;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;

import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims;
import dev.holdfast.test.ClusterLocksContractTests;
import dev.holdfast.test.TickClaimsContractTests;

/**
 * The tick-claims and cluster-locks contracts on the portable dialect, for databases without SQL
 * of their own here, run on H2 with standard SQL only.
 */
class GenericSqlJdbcContractTests implements TickClaimsContractTests, ClusterLocksContractTests {

	private static final String URL = "jdbc:h2:mem:holdfast-generic-contract-" + UUID.randomUUID()
			+ ";DB_CLOSE_DELAY=-1";

	private static HikariDataSource keeper;

	private final List<PooledJdbcLockBackend> backends = new ArrayList<>();

	@BeforeAll
	static void createDatabase() {
		keeper = JdbcContractTests.h2(URL);
		JdbcContractTests.createSchema(keeper, "h2");
	}

	@AfterAll
	static void dropDatabase() {
		keeper.close();
	}

	@AfterEach
	void closeBackends() {
		this.backends.forEach(PooledJdbcLockBackend::close);
	}

	@Override
	public TickClaims newClaimsClient() {
		return newClient();
	}

	@Override
	public LockBackend newClusterClient() {
		return newClient();
	}

	private PooledJdbcLockBackend newClient() {
		PooledJdbcLockBackend backend = new PooledJdbcLockBackend(JdbcContractTests.h2(URL));
		backend.connections()
			.useDialect(new GenericSqlDialect(backend.getTableName(), backend.connections().queryTimeoutSeconds(), "h2"));
		this.backends.add(backend);
		return backend;
	}

}
