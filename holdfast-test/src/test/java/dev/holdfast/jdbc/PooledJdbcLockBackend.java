package dev.holdfast.jdbc;

import com.zaxxer.hikari.HikariDataSource;

/**
 * A backend with a connection pool of its own, closed with it: one client of a shared database
 * server, as another process would be.
 */
final class PooledJdbcLockBackend extends JdbcLockBackend implements AutoCloseable {

	private final HikariDataSource dataSource;

	PooledJdbcLockBackend(HikariDataSource dataSource) {
		super(dataSource);
		this.dataSource = dataSource;
	}

	@Override
	public void close() {
		super.close();
		this.dataSource.close();
	}

}
