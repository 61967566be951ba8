package dev.holdfast.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.jdbc.core.JdbcTemplate;

import dev.holdfast.test.server.PostgresServer;

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

	@Override
	protected void installStall(JdbcTemplate operator, String table) {
		operator.execute("CREATE OR REPLACE FUNCTION holdfast_stall() RETURNS trigger LANGUAGE plpgsql AS $$"
				+ " BEGIN IF NEW.owner_token LIKE 'stall:%' THEN UPDATE holdfast_gate SET n = n + 1; END IF;"
				+ " RETURN NEW; END $$");
		operator.execute("CREATE TRIGGER holdfast_stall BEFORE INSERT ON " + table
				+ " FOR EACH ROW EXECUTE FUNCTION holdfast_stall()");
	}

	@Override
	protected long lockWaits(JdbcTemplate operator) {
		return operator.queryForObject("SELECT COUNT(*) FROM pg_locks WHERE NOT granted", Long.class);
	}
}
