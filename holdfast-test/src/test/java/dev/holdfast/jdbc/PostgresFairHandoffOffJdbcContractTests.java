package dev.holdfast.jdbc;

import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims;

/**
 * The contracts on a real PostgreSQL server with fair handoff off (it is on by default, as in
 * {@link PostgresJdbcContractTests}): a release frees the lock for the first attempt, whichever
 * instance makes it.
 */
class PostgresFairHandoffOffJdbcContractTests extends PostgresJdbcContractTests {

	@Override
	protected LockBackend newBackend() {
		PooledJdbcLockBackend backend = new PooledJdbcLockBackend(newDataSource());
		backend.setFairHandoff(false);
		return backend;
	}

	@Override
	public TickClaims newClaimsClient() {
		PooledJdbcLockBackend backend = new PooledJdbcLockBackend(newDataSource());
		backend.setFairHandoff(false);
		return trackBackend(backend);
	}

}
