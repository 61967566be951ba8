package dev.holdfast.jdbc;

import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims;

/**
 * The contracts on a real PostgreSQL server with fair handoff on: releases that threads of two
 * instances wait for reserve the lock for one of them.
 */
class PostgresFairHandoffJdbcContractTests extends PostgresJdbcContractTests {

	@Override
	protected LockBackend newBackend() {
		PooledJdbcLockBackend backend = new PooledJdbcLockBackend(newDataSource());
		backend.setFairHandoff(true);
		return backend;
	}

	@Override
	public TickClaims newClaimsClient() {
		PooledJdbcLockBackend backend = new PooledJdbcLockBackend(newDataSource());
		backend.setFairHandoff(true);
		return trackBackend(backend);
	}

}
