package dev.holdfast.actuate;

import java.util.ArrayList;
import java.util.List;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.core.io.ClassPathResource;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;

import dev.holdfast.jdbc.JdbcLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.server.PostgresServer;

/**
 * Forced release on a real PostgreSQL, each template with a connection pool of its own.
 */
class PostgresForcedReleaseTests extends AbstractForcedReleaseTests {

	private static final List<HikariDataSource> pools = new ArrayList<>();

	@BeforeAll
	static void createSchema() {
		try (HikariDataSource dataSource = PostgresServer.shared().newDataSource()) {
			new ResourceDatabasePopulator(new ClassPathResource("dev/holdfast/jdbc/schema-postgresql.sql"))
				.execute(dataSource);
		}
	}

	@AfterAll
	static void closePools() {
		pools.forEach(HikariDataSource::close);
	}

	@Override
	protected LockBackend newBackend() {
		HikariDataSource pool = PostgresServer.shared().newDataSource();
		pools.add(pool);
		return new JdbcLockBackend(pool);
	}

}
