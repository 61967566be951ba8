package dev.holdfast.scheduling;

import org.springframework.boot.builder.SpringApplicationBuilder;

import dev.holdfast.test.server.MariaDbServer;

/**
 * Three instances on one real MariaDB server, each with its own connection pool.
 */
class MariaDbSingleInstanceClusterTests extends AbstractSingleInstanceClusterTests {

	@Override
	protected void configureBackend(SpringApplicationBuilder builder) {
		builder.sources(JdbcSingleInstanceClusterTests.AutoConfig.class)
			.properties("spring.datasource.url=" + MariaDbServer.shared().jdbcUrl(),
					"spring.datasource.username=root", "holdfast.backend=jdbc",
					"holdfast.jdbc.initialize-schema=always");
	}

	@Override
	protected String expectedBackend() {
		return "jdbc";
	}

	@Override
	protected String label() {
		return "jdbc (MariaDB)";
	}

}
