package dev.holdfast.scheduling;

import java.util.UUID;

import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;

/**
 * Three instances on one H2 database, each with its own connection pool.
 */
class JdbcSingleInstanceClusterTests extends AbstractSingleInstanceClusterTests {

	private final String url = "jdbc:h2:mem:scheduling-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";

	@Override
	protected void configureBackend(SpringApplicationBuilder builder) {
		builder.sources(AutoConfig.class)
			.properties("spring.datasource.url=" + this.url, "holdfast.backend=jdbc",
					"holdfast.jdbc.initialize-schema=always");
	}

	@Override
	protected String expectedBackend() {
		return "jdbc";
	}

	@Override
	protected String label() {
		return "jdbc (H2)";
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration({ DataSourceAutoConfiguration.class, HoldfastAutoConfiguration.class })
	static class AutoConfig {

	}

}
