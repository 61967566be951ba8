package dev.holdfast.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.jdbc.core.JdbcTemplate;

import dev.holdfast.test.server.MariaDbServer;

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

	@Override
	protected void installStall(JdbcTemplate operator, String table) {
		operator.execute("CREATE TRIGGER holdfast_stall BEFORE INSERT ON " + table + " FOR EACH ROW"
				+ " BEGIN IF NEW.owner_token LIKE 'stall:%' THEN UPDATE holdfast_gate SET n = n + 1; END IF; END");
	}

	@Override
	protected long lockWaits(JdbcTemplate operator) {
		return operator.queryForObject(
				"SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'", Long.class);
	}
}
