package dev.holdfast.scheduling;

import org.springframework.boot.builder.SpringApplicationBuilder;

import dev.holdfast.test.server.PostgresServer;

/**
 * Three instances on one real PostgreSQL server, each with its own connection pool.
 */
class PostgresSingleInstanceClusterTests extends AbstractSingleInstanceClusterTests {

	@Override
	protected void configureBackend(SpringApplicationBuilder builder) {
		builder.sources(JdbcSingleInstanceClusterTests.AutoConfig.class)
			.properties("spring.datasource.url=" + PostgresServer.shared().jdbcUrl(),
					"spring.datasource.username=postgres", "spring.datasource.password=postgres",
					"holdfast.backend=jdbc", "holdfast.jdbc.initialize-schema=always");
	}

	@Override
	protected String expectedBackend() {
		return "jdbc";
	}

	@Override
	protected String label() {
		return "jdbc (PostgreSQL)";
	}

}
