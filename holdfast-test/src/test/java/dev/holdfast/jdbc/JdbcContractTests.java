package dev.holdfast.jdbc;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;

import org.springframework.core.io.ClassPathResource;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;

import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims;
import dev.holdfast.test.ClusterLocksContractTests;
import dev.holdfast.test.LeadershipContractTests;
import dev.holdfast.test.LockBackendContractTests;
import dev.holdfast.test.TickClaimsContractTests;

/**
 * The contracts of locks and tick claims on {@link JdbcLockBackend}; a subclass per database
 * names the shared server. Every client has a connection pool of its own, as another process.
 */
abstract class JdbcContractTests extends LockBackendContractTests
		implements TickClaimsContractTests, ClusterLocksContractTests, LeadershipContractTests {

	/** A new, independent connection pool on the shared server, whose schema exists. */
	protected abstract HikariDataSource newDataSource();

	@Override
	protected LockBackend newBackend() {
		return new PooledJdbcLockBackend(newDataSource());
	}

	@Override
	public TickClaims newClaimsClient() {
		return trackBackend(new PooledJdbcLockBackend(newDataSource()));
	}

	@Override
	public LockBackend newClusterClient() {
		return trackBackend(new PooledJdbcLockBackend(newDataSource()));
	}

	static void createSchema(DataSource dataSource, String platform) {
		new ResourceDatabasePopulator(new ClassPathResource("dev/holdfast/jdbc/schema-" + platform + ".sql"))
			.execute(dataSource);
	}

	static HikariDataSource h2(String url) {
		HikariDataSource dataSource = new HikariDataSource();
		dataSource.setJdbcUrl(url);
		dataSource.setUsername("sa");
		dataSource.setMaximumPoolSize(4);
		dataSource.setMinimumIdle(0);
		dataSource.setConnectionTimeout(2000);
		return dataSource;
	}

	/** For the databases whose contract test runs {@link dev.holdfast.test.LeadershipContractTests}. */
	public LockBackend newLeadershipClient() {
		return trackBackend(newBackend());
	}

	/** No SharedLocks on this branch: READ is refused naming the backend (RWL-9); true once it gives read holds. */
	@Override
	public boolean expectsReadHolds() {
		return true;
	}

}
