package dev.holdfast.semaphore;

import java.util.ArrayList;
import java.util.List;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.core.io.ClassPathResource;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;

import dev.holdfast.jdbc.JdbcLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.server.PostgresServer;

/**
 * A waiting permit call on a real PostgreSQL, each template with a pool of its own: a refused try
 * marks the slot's row, and the release of a marked row is announced to every instance.
 */
class PostgresPermitWakeTests extends AbstractPermitWakeTests {

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

	@Test
	void aWaitingCallHoldsAReleasedSlotAtOnceWhicheverItIs() throws Exception {
		aWaitingCallHoldsAnyReleasedSlotAtOnce();
	}

}
