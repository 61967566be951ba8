package dev.holdfast.bench;

import javax.sql.DataSource;

import dev.holdfast.jdbc.JdbcLockBackend;

/**
 * Holdfast on its JDBC backend, through {@code LockTemplate}; {@code -Dbench.jdbc.fairHandoff=true}
 * turns on {@link JdbcLockBackend#setFairHandoff fair handoff} ({@code holdfast.jdbc.fair-handoff}).
 */
final class HoldfastJdbcClients {

	private HoldfastJdbcClients() {
	}

	static LockClient create(DataSource dataSource) {
		JdbcLockBackend backend = new JdbcLockBackend(dataSource);
		backend.setFairHandoff(Boolean.getBoolean("bench.jdbc.fairHandoff"));
		return HoldfastClients.templateClient(HoldfastClients.template(backend),
				() -> ((AutoCloseable) dataSource).close());
	}

}
