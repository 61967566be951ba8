package dev.holdfast.bench;

import javax.sql.DataSource;

import dev.holdfast.jdbc.JdbcLockBackend;

/** Holdfast on its JDBC backend, through {@code LockTemplate}. */
final class HoldfastJdbcClients {

	private HoldfastJdbcClients() {
	}

	static LockClient create(DataSource dataSource) {
		return HoldfastClients.templateClient(HoldfastClients.template(new JdbcLockBackend(dataSource)),
				() -> ((AutoCloseable) dataSource).close());
	}

}
