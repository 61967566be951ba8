package dev.holdfast.jdbc;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import dev.holdfast.spi.AcquireResult;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class JdbcFencingGuardTests {

	private static HikariDataSource dataSource;

	private static JdbcTemplate jdbc;

	@BeforeAll
	static void createDatabase() {
		dataSource = H2JdbcBackendTests.h2("jdbc:h2:mem:holdfast-guard-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
		AbstractJdbcBackendTests.createSchema(dataSource, "h2");
		jdbc = new JdbcTemplate(dataSource);
		jdbc.execute("CREATE TABLE account (id VARCHAR(36) PRIMARY KEY, balance INT NOT NULL, fence BIGINT)");
	}

	@AfterAll
	static void dropDatabase() {
		dataSource.close();
	}

	@Test
	void writeOfAHolderWhoseLeaseWasTakenOverIsRejected() throws Exception {
		String id = UUID.randomUUID().toString();
		jdbc.update("INSERT INTO account (id, balance) VALUES (?, 0)", id);
		JdbcFencingGuard guard = new JdbcFencingGuard(jdbc, "account", "id", "fence");
		JdbcLockBackend backend = new JdbcLockBackend(dataSource);
		String lock = "account:" + id;
		AcquireResult paused = backend.tryAcquire(lock, "paused-holder", Duration.ofMillis(100));
		assertThat(guard.update(id, paused.fencingToken(), Map.of("balance", 10))).isTrue();
		// the first holder pauses past its lease; another takes the lock and writes
		AcquireResult next = await().atMost(Duration.ofSeconds(5))
			.until(() -> backend.tryAcquire(lock, "next-holder", Duration.ofSeconds(10)), AcquireResult::acquired);
		assertThat(guard.update(id, next.fencingToken(), Map.of("balance", 20))).isTrue();
		assertThat(guard.update(id, next.fencingToken(), Map.of("balance", 25))).as("same holder writes again")
			.isTrue();
		// the paused holder wakes up and writes with its old token
		assertThat(guard.update(id, paused.fencingToken(), Map.of("balance", 999))).isFalse();
		assertThat(jdbc.queryForObject("SELECT balance FROM account WHERE id = ?", Integer.class, id)).isEqualTo(25);
		assertThat(jdbc.queryForObject("SELECT fence FROM account WHERE id = ?", Long.class, id))
			.isEqualTo(next.fencingToken());
	}

	@Test
	void writeToAMissingRowIsNotAccepted() {
		JdbcFencingGuard guard = new JdbcFencingGuard(jdbc, "account", "id", "fence");
		assertThat(guard.update("no-such-id", 1, Map.of("balance", 1))).isFalse();
	}

	@Test
	void namesThatAreNotIdentifiersAreRejected() {
		assertThatIllegalArgumentException().isThrownBy(() -> new JdbcFencingGuard(jdbc, "account; --", "id", "fence"))
			.withMessageContaining("account; --");
		assertThatIllegalArgumentException().isThrownBy(() -> new JdbcFencingGuard(jdbc, "account", "id", "fence)"));
		JdbcFencingGuard guard = new JdbcFencingGuard(jdbc, "account", "id", "fence");
		assertThatIllegalArgumentException().isThrownBy(() -> guard.update("x", 1, Map.of("balance = 0, id", 1)));
	}

}
