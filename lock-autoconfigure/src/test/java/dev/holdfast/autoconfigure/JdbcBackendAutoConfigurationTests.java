package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.UUID;

import javax.sql.DataSource;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.jdbc.DataSourceBuilder;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Primary;
import org.springframework.jdbc.core.JdbcTemplate;

import dev.holdfast.Lease;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.jdbc.HoldfastDataSource;
import dev.holdfast.jdbc.JdbcLockBackend;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;

@ExtendWith(OutputCaptureExtension.class)
class JdbcBackendAutoConfigurationTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class, HoldfastAutoConfiguration.class));

	private static String h2Url() {
		return "jdbc:h2:mem:holdfast-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";
	}

	@Test
	void dataSourceIsDetectedAndTheEmbeddedSchemaCreated() {
		this.runner.withPropertyValues("spring.datasource.url=" + h2Url()).run((context) -> {
			assertThat(context).hasSingleBean(JdbcLockBackend.class)
				.hasSingleBean(HoldfastJdbcDataSourceScriptDatabaseInitializer.class);
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			try (Lease lease = template.acquire("job", null, LockOptions.defaults())) {
				JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
				assertThat(jdbc.queryForObject("SELECT fence FROM holdfast_lock WHERE lock_key = ?", Long.class,
						lease.key())).isEqualTo(lease.fencingToken());
				assertThat(jdbc.queryForObject("SELECT holder FROM holdfast_lock WHERE lock_key = ?", String.class,
						lease.key())).startsWith("pid " + ProcessHandle.current().pid() + "@");
			}
		});
	}

	@Test
	void anInMemoryDatabaseChosenBecauseItExistsWarnsThatLocksAreLocalToTheJvm(CapturedOutput output) {
		// Boot's embedded H2 without spring.datasource.url, as an application gets it by accident
		this.runner.run((context) -> {
			assertThat(context).hasSingleBean(JdbcLockBackend.class);
			assertThat(output).contains("Holdfast keeps locks in the jdbc backend on an in-memory database of this JVM")
				.contains("do not exclude other instances")
				.contains("spring.datasource.url");
		});
	}

	@Test
	void anInMemoryDatabaseChosenExplicitlyDoesNotWarn(CapturedOutput output) {
		this.runner.withPropertyValues("holdfast.backend=jdbc").run((context) -> {
			assertThat(context).hasSingleBean(JdbcLockBackend.class);
			assertThat(output).doesNotContain("in-memory database");
		});
	}

	@Test
	void aDatabaseOnDiskDoesNotWarn(CapturedOutput output) throws Exception {
		java.nio.file.Path dir = java.nio.file.Files.createTempDirectory("holdfast-h2");
		this.runner
			.withPropertyValues("spring.datasource.url=jdbc:h2:file:" + dir.resolve("locks"),
					"holdfast.jdbc.initialize-schema=always")
			.run((context) -> {
			assertThat(context).hasSingleBean(JdbcLockBackend.class);
			assertThat(output).doesNotContain("in-memory database");
		});
	}

	@Test
	void releaseEventsAreOnByDefault() {
		this.runner.withPropertyValues("spring.datasource.url=" + h2Url())
			.run((context) -> assertThat(context.getBean(JdbcLockBackend.class).isReleaseEvents()).isTrue());
	}

	@Test
	void releaseEventsCanBeTurnedOff() {
		this.runner.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.jdbc.release-events=false")
			.run((context) -> assertThat(context.getBean(JdbcLockBackend.class).isReleaseEvents()).isFalse());
	}

	@Test
	void fairHandoffIsOnByDefaultAndCanBeTurnedOff() {
		this.runner.withPropertyValues("spring.datasource.url=" + h2Url())
			.run((context) -> assertThat(context.getBean(JdbcLockBackend.class).isFairHandoff()).isTrue());
		this.runner.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.jdbc.fair-handoff=false")
			.run((context) -> assertThat(context.getBean(JdbcLockBackend.class).isFairHandoff()).isFalse());
	}

	@Test
	void fairHandoffDefaultsAlikeOnABackendBuiltByHand() {
		DataSource dataSource = DataSourceBuilder.create().url(h2Url()).build();
		assertThat(new JdbcLockBackend(dataSource).isFairHandoff()).isTrue()
			.isEqualTo(new HoldfastJdbcProperties().isFairHandoff());
	}

	@Test
	void explicitJdbcBackendIsUsed() {
		this.runner.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.backend=jdbc")
			.run((context) -> assertThat(context.getBean(LockBackend.class)).isInstanceOf(JdbcLockBackend.class));
	}

	@Test
	void missingTableFailsAtStartupNamingTheScript() {
		this.runner.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.jdbc.initialize-schema=never")
			.run((context) -> {
				assertThat(context).hasFailed();
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getDescription()).contains("holdfast_lock");
				assertThat(analysis.getAction()).contains("classpath:dev/holdfast/jdbc/schema-h2.sql")
					.contains("holdfast.jdbc.initialize-schema=always");
			});
	}

	@Test
	void customTableWithItsOwnScript() {
		this.runner
			.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.jdbc.table-name=app_locks",
					"holdfast.jdbc.schema=classpath:dev/holdfast/jdbc/app-locks-schema.sql")
			.run((context) -> {
				assertThat(context.getBean(JdbcLockBackend.class).getTableName()).isEqualTo("app_locks");
				DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
				template.acquire("job", null, LockOptions.defaults()).close();
			});
	}

	@Test
	void customTableIsCreatedByTheShippedScriptWithInitializeSchemaAlways() {
		// before: the shipped script created holdfast_lock, and the table check then failed with an
		// action that suggested initialize-schema=always, the setting already in force
		this.runner
			.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.jdbc.table-name=orders_locks",
					"holdfast.jdbc.initialize-schema=always")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
				try (Lease lease = template.acquire("job", null, LockOptions.defaults())) {
					JdbcTemplate jdbc = new JdbcTemplate(context.getBean(DataSource.class));
					assertThat(jdbc.queryForObject("SELECT fence FROM orders_locks WHERE lock_key = ?", Long.class,
							lease.key())).isEqualTo(lease.fencingToken());
					assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES"
							+ " WHERE LOWER(TABLE_NAME) = 'holdfast_lock'", Integer.class)).isZero();
				}
			});
	}

	@Test
	void missingCustomTableNamesTheTableToPutInTheScript() {
		this.runner
			.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.jdbc.table-name=orders_locks",
					"holdfast.jdbc.initialize-schema=never")
			.run((context) -> {
				assertThat(context).hasFailed();
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getAction()).contains("with holdfast_lock replaced by orders_locks");
			});
	}

	@Test
	void maxKeyLengthLongerThanTheKeyColumnFailsAtStartup() {
		// before: the context started, and every lock whose key was longer than 255 characters
		// failed at the call with the database's "value too long"
		this.runner.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.max-key-length=400")
			.run((context) -> {
				assertThat(context).hasFailed();
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getDescription()).contains("holdfast.max-key-length is 400")
					.contains("at most 255 characters");
				assertThat(analysis.getAction()).contains("holdfast.max-key-length to at most 255");
			});
	}

	@Test
	void maxKeyLengthWithinTheKeyColumnStarts() {
		this.runner.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.max-key-length=255")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(JdbcLockBackend.class).keyColumnLength()).isEqualTo(255);
			});
	}

	@Test
	void leaseTimeUnderOneMillisecondFailsAtStartup() {
		// before: 500us passed as positive; the jdbc backend then stored a time to live of 0 ms, a
		// lock that expired as it was taken
		this.runner.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.lease-time=500us")
			.run((context) -> {
				assertThat(context).hasFailed();
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getDescription()).contains("holdfast.lease-time must be at least 1ms");
			});
	}

	@Test
	void badTableNameFailsAtStartupNamingTheProperty() {
		this.runner
			.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.jdbc.table-name=locks; DROP TABLE users")
			.run((context) -> {
				assertThat(context).hasFailed();
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getDescription()).contains("locks; DROP TABLE users")
					.contains("holdfast.jdbc.table-name");
				assertThat(analysis.getAction()).contains("holdfast.jdbc.table-name");
			});
	}

	@Test
	void nonPositiveQueryTimeoutFailsAtStartupNamingTheProperty() {
		this.runner.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.jdbc.query-timeout=0s")
			.run((context) -> {
				assertThat(context).hasFailed();
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getAction()).contains("holdfast.jdbc.query-timeout");
			});
	}

	@Test
	void tooShortSweepDelayFailsAtStartupNamingThePropertyAndTheMinimum() {
		this.runner
			.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.jdbc.query-timeout=10s",
					"holdfast.jdbc.sweep-after=90s")
			.run((context) -> {
				assertThat(context).hasFailed();
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getDescription()).contains("holdfast.jdbc.sweep-after is 90s");
				assertThat(analysis.getAction()).contains("holdfast.jdbc.sweep-after to at least 100s");
			});
	}

	@Test
	void sweepDelayIsConfigurable() {
		this.runner.withPropertyValues("spring.datasource.url=" + h2Url(), "holdfast.jdbc.sweep-after=10m")
			.run((context) -> assertThat(context).hasNotFailed()
				.getBean(HoldfastJdbcProperties.class)
				.extracting(HoldfastJdbcProperties::getSweepAfter)
				.isEqualTo(Duration.ofMinutes(10)));
	}

	@Test
	void explicitJdbcBackendWithoutDataSourceFailsWithAnAction() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
			.withPropertyValues("holdfast.backend=jdbc")
			.run((context) -> {
				assertThat(context).hasFailed();
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getDescription()).contains("no DataSource");
				assertThat(analysis.getAction()).contains("spring.datasource.url");
			});
	}

	@Test
	void qualifiedDataSourceHoldsTheLocks() {
		this.runner.withUserConfiguration(TwoDataSources.class).run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			try (Lease lease = template.acquire("job", null, LockOptions.defaults())) {
				DataSource locks = context.getBean("lockDataSource", DataSource.class);
				assertThat(new JdbcTemplate(locks).queryForObject("SELECT COUNT(*) FROM holdfast_lock", Long.class))
					.isOne();
				DataSource app = context.getBean("appDataSource", DataSource.class);
				assertThat(new JdbcTemplate(app).queryForObject(
						"SELECT COUNT(*) FROM INFORMATION_SCHEMA.TABLES WHERE TABLE_NAME = 'HOLDFAST_LOCK'",
						Long.class))
					.isZero();
			}
		});
	}

	@Configuration(proxyBeanMethods = false)
	static class TwoDataSources {

		@Bean
		@Primary
		DataSource appDataSource() {
			return DataSourceBuilder.create().url(h2Url()).build();
		}

		@Bean
		@HoldfastDataSource
		DataSource lockDataSource() {
			return DataSourceBuilder.create().url(h2Url()).build();
		}

	}

}
