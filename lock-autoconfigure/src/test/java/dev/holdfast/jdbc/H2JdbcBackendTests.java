package dev.holdfast.jdbc;

import java.time.Duration;
import java.util.List;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import dev.holdfast.spi.HeldLock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@link JdbcLockBackend} on H2 in server-less mode, shared by every client of the class
 * through one named in-memory database.
 */
class H2JdbcBackendTests extends AbstractJdbcSharedLocksTests {

	private static final String URL = "jdbc:h2:mem:holdfast-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1";

	private static HikariDataSource keeper;

	@BeforeAll
	static void createDatabase() {
		keeper = h2(URL);
		createSchema(keeper, "h2");
	}

	@AfterAll
	static void dropDatabase() {
		keeper.close();
	}

	/** Several keys at once (MKY-6, SEM-7) on PostgreSQL only: elsewhere the SPI call says so, asked anyway. */
	@Test
	void locksAreNotTakenAtOnceAndTheCallSaysWhy() throws Exception {
		try (JdbcLockBackend backend = newBackend()) {
			assertThat(backend.tryAcquire("h2-at-once", "probe", Duration.ofSeconds(5)).acquired()).isTrue();
			assertThat(backend.acquiresKeySets()).isFalse();
			List<HeldLock> locks = List.of(new HeldLock("h2-at-once#0", "a", Duration.ofSeconds(5)),
					new HeldLock("h2-at-once#1", "b", Duration.ofSeconds(5)));
			assertThatExceptionOfType(UnsupportedOperationException.class)
				.isThrownBy(() -> backend.tryAcquireFirst(locks))
				.withMessageContaining("on PostgreSQL only");
			assertThatExceptionOfType(UnsupportedOperationException.class)
				.isThrownBy(() -> backend.tryAcquireAll(locks))
				.withMessageContaining("acquiresKeySets()");
		}
	}

	static HikariDataSource h2(String url) {
		HikariDataSource dataSource = new HikariDataSource();
		dataSource.setJdbcUrl(url);
		dataSource.setUsername("sa");
		dataSource.setMaximumPoolSize(4);
		dataSource.setMinimumIdle(0);
		dataSource.setConnectionTimeout(2000);
		return dataSource;
	}

	@Override
	protected HikariDataSource newDataSource() {
		return h2(URL);
	}

	@Override
	protected String farSessionTimeZoneSql() {
		return "SET TIME ZONE 'Pacific/Kiritimati'";
	}

	@Override
	protected String platform() {
		return "h2";
	}

	@Override
	protected void installStall(JdbcTemplate operator, String table) {
		installH2Stall(operator, table);
	}

	@Override
	protected long lockWaits(JdbcTemplate operator) {
		return h2LockWaits(operator);
	}

	static void installH2Stall(JdbcTemplate operator, String table) {
		operator.execute("CREATE TRIGGER holdfast_stall BEFORE INSERT ON " + table + " FOR EACH ROW CALL '"
				+ H2StallTrigger.class.getName() + "'");
	}

	static long h2LockWaits(JdbcTemplate operator) {
		return operator.queryForObject(
				"SELECT COUNT(*) FROM INFORMATION_SCHEMA.SESSIONS WHERE BLOCKER_ID IS NOT NULL", Long.class);
	}
}
