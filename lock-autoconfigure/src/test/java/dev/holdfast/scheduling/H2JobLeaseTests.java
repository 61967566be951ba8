package dev.holdfast.scheduling;

import java.util.UUID;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;

/**
 * Job leases on the jdbc backend, one H2 database, each context with its own connection pool.
 */
class H2JobLeaseTests extends AbstractJobLeaseTests {

	private final String url = "jdbc:h2:mem:job-lease-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";

	@Override
	protected ApplicationContextRunner runner() {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, HoldfastAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + this.url, "holdfast.backend=jdbc",
					"holdfast.jdbc.initialize-schema=always");
	}

	@Override
	protected String expectedBackend() {
		return "jdbc";
	}

}
