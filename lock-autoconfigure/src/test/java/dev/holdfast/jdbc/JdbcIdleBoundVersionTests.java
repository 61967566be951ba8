package dev.holdfast.jdbc;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * RWL-39: read-write transactions bound their idle time only where the database has the timeout,
 * PostgreSQL 9.6+ and MariaDB 10.3+; below, the {@code SET} would fail every read-write operation.
 */
class JdbcIdleBoundVersionTests {

	@Test
	void postgresqlFrom96() {
		assertThat(JdbcLockDialect.boundsIdleTransactions("postgresql", 9, 5)).isFalse();
		assertThat(JdbcLockDialect.boundsIdleTransactions("postgresql", 8, 10)).isFalse();
		assertThat(JdbcLockDialect.boundsIdleTransactions("postgresql", 9, 6)).isTrue();
		assertThat(JdbcLockDialect.boundsIdleTransactions("postgresql", 10, 0)).isTrue();
		assertThat(JdbcLockDialect.boundsIdleTransactions("postgresql", 17, 2)).isTrue();
	}

	@Test
	void mariadbFrom103() {
		assertThat(JdbcLockDialect.boundsIdleTransactions("mariadb", 10, 2)).isFalse();
		assertThat(JdbcLockDialect.boundsIdleTransactions("mariadb", 5, 5)).isFalse();
		assertThat(JdbcLockDialect.boundsIdleTransactions("mariadb", 10, 3)).isTrue();
		assertThat(JdbcLockDialect.boundsIdleTransactions("mariadb", 11, 4)).isTrue();
	}

	@Test
	void noOtherDatabase() {
		assertThat(JdbcLockDialect.boundsIdleTransactions("mysql", 8, 4)).isFalse();
		assertThat(JdbcLockDialect.boundsIdleTransactions("h2", 2, 3)).isFalse();
	}

}
