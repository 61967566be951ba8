package dev.holdfast.scheduling;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.test.server.PostgresServer;

/**
 * Job leases on the jdbc backend, one real PostgreSQL server, each context with its own
 * connection pool.
 */
class PostgresJobLeaseTests extends AbstractJobLeaseTests {

	@Override
	protected ApplicationContextRunner runner() {
		PostgresServer postgres = PostgresServer.shared();
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, HoldfastAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + postgres.jdbcUrl(), "spring.datasource.username=postgres",
					"spring.datasource.password=postgres", "holdfast.backend=jdbc",
					"holdfast.jdbc.initialize-schema=always");
	}

	@Override
	protected String expectedBackend() {
		return "jdbc";
	}

}
