package dev.holdfast.bench;

import javax.sql.DataSource;

import dev.holdfast.jdbc.JdbcLockBackend;

/**
 * Holdfast on its JDBC backend, through {@code LockTemplate}, with
 * {@link JdbcLockBackend#setFairHandoff fair handoff} on as the auto-configuration sets it
 * ({@code holdfast.jdbc.fair-handoff}); {@code -Dbench.jdbc.fairHandoff=false} turns it off.
 */
final class HoldfastJdbcClients {

	private HoldfastJdbcClients() {
	}

	static LockClient create(DataSource dataSource) {
		HoldfastClients.Closing jdbc = template(dataSource);
		return HoldfastClients.templateClient(jdbc.template(), jdbc.onClose());
	}

	/** The template over the backend, and what closes the pool. */
	static HoldfastClients.Closing template(DataSource dataSource) {
		JdbcLockBackend backend = new JdbcLockBackend(dataSource);
		backend.setFairHandoff(!"false".equals(System.getProperty("bench.jdbc.fairHandoff", "true")));
		return new HoldfastClients.Closing(HoldfastClients.template(backend),
				() -> ((AutoCloseable) dataSource).close());
	}

}
