package dev.holdfast.jdbc;

import java.util.UUID;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The portable dialect, for databases without SQL of their own here, run on H2 with standard
 * SQL only.
 */
class GenericSqlJdbcBackendTests extends AbstractJdbcSharedLocksTests {

	private static final String URL = "jdbc:h2:mem:holdfast-generic-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";

	private static HikariDataSource keeper;

	@BeforeAll
	static void createDatabase() {
		keeper = H2JdbcBackendTests.h2(URL);
		createSchema(keeper, "h2");
	}

	@AfterAll
	static void dropDatabase() {
		keeper.close();
	}

	@Override
	protected HikariDataSource newDataSource() {
		return H2JdbcBackendTests.h2(URL);
	}

	@Override
	protected JdbcLockBackend newBackend(DataSource dataSource, String table) {
		JdbcLockBackend backend = super.newBackend(dataSource, table);
		backend.connections()
			.useDialect(new GenericSqlDialect(backend.getTableName(), backend.connections().queryTimeoutSeconds(), "h2"));
		return backend;
	}

	@Override
	protected String farSessionTimeZoneSql() {
		return "SET TIME ZONE 'Pacific/Kiritimati'";
	}

	@Override
	protected String platform() {
		return "h2";
	}

	@Override
	protected void installStall(JdbcTemplate operator, String table) {
		H2JdbcBackendTests.installH2Stall(operator, table);
	}

	@Override
	protected long lockWaits(JdbcTemplate operator) {
		return H2JdbcBackendTests.h2LockWaits(operator);
	}
}
