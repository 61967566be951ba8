package dev.holdfast.scheduling;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import javax.sql.DataSource;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.test.server.MariaDbServer;
import dev.holdfast.test.server.PostgresServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Scheduled jobs in a context on the JDBC backend, on H2 and on real PostgreSQL and MariaDB
 * servers: what they leave in the lock table.
 */
class JdbcSingleInstanceScheduledTests {

	private static final int TICKS = 6;

	static Stream<Arguments> databases() {
		return Stream.of(
				Arguments.of("h2", List.of("spring.datasource.url=jdbc:h2:mem:ticks-" + UUID.randomUUID()
						+ ";DB_CLOSE_DELAY=-1")),
				Arguments.of("postgresql", List.of("spring.datasource.url=" + PostgresServer.shared().jdbcUrl(),
						"spring.datasource.username=postgres", "spring.datasource.password=postgres")),
				Arguments.of("mariadb", List.of("spring.datasource.url=" + MariaDbServer.shared().jdbcUrl(),
						"spring.datasource.username=root")));
	}

	@ParameterizedTest(name = "{0}")
	@MethodSource("databases")
	void cronJobKeepsTwoRowsHoweverManyTicksItRuns(String database, List<String> dataSource) {
		String name = "rows-" + UUID.randomUUID();
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, HoldfastAutoConfiguration.class))
			.withPropertyValues(dataSource.toArray(String[]::new))
			.withPropertyValues("holdfast.backend=jdbc", "holdfast.jdbc.initialize-schema=always", "job.name=" + name)
			.withBean(EverySecond.class)
			.run((context) -> {
				EverySecond job = context.getBean(EverySecond.class);
				await().atMost(Duration.ofSeconds(TICKS + 20)).until(() -> job.runs.get() >= TICKS);
				List<String> rows = new JdbcTemplate(context.getBean(DataSource.class))
					.queryForList("SELECT lock_key FROM holdfast_lock WHERE lock_key LIKE ?", String.class,
							"%" + name + "%");
				System.out.println("Rows of a 1-second job on " + database + " after " + job.runs.get() + " ticks: "
						+ rows.size());
				// the job lock, and the record of the job's last claimed tick
				assertThat(rows).as("rows after %d ticks", job.runs.get())
					.containsExactlyInAnyOrder("holdfast:" + name, "holdfast:" + name + "{tick}");
			});
	}

	static class EverySecond {

		final AtomicInteger runs = new AtomicInteger();

		@SingleInstanceScheduled(cron = "* * * * * *", name = "${job.name}")
		void tick() {
			this.runs.incrementAndGet();
		}

	}

}
