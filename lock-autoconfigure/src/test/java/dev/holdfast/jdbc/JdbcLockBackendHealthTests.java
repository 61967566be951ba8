package dev.holdfast.jdbc;

import java.sql.SQLException;
import java.time.Duration;
import java.util.UUID;

import org.h2.tools.Server;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code holdfast} health indicator on a real H2 server reached over TCP: UP while it
 * answers, DOWN once the server is stopped.
 */
class JdbcLockBackendHealthTests {

	private Server server;

	@BeforeEach
	void start() throws SQLException {
		this.server = Server.createTcpServer("-tcpPort", "0", "-ifNotExists").start();
	}

	@AfterEach
	void stop() {
		this.server.stop();
	}

	@Test
	void healthIsDownOnceTheDatabaseIsStopped() {
		String url = "jdbc:h2:tcp://localhost:" + this.server.getPort() + "/mem:holdfast-health-" + UUID.randomUUID()
				+ ";DB_CLOSE_DELAY=-1";
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
					HoldfastAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class))
			.withPropertyValues("spring.datasource.url=" + url, "spring.datasource.hikari.connection-timeout=1000",
					"holdfast.backend=jdbc", "holdfast.jdbc.initialize-schema=always")
			.run((context) -> {
				HealthIndicator indicator = context.getBean("holdfastHealthIndicator", HealthIndicator.class);
				Health up = indicator.health(true);
				assertThat(up.getStatus()).isEqualTo(Status.UP);
				assertThat(up.getDetails()).containsEntry("backend", "jdbc")
					.containsEntry("database", "H2")
					.containsEntry("table", "holdfast_lock");

				this.server.stop();
				long start = System.nanoTime();
				Health down = indicator.health(true);
				assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
				assertThat(down.getStatus()).isEqualTo(Status.DOWN);
				assertThat(down.getDetails()).containsEntry("backend", "jdbc").containsKey("error");
			});
	}

}
