package dev.holdfast.jdbc;

import java.time.Duration;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.testsupport.PostgresServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * A PostgreSQL server of its own, restarted while clients use it.
 */
class PostgresRestartJdbcBackendTests {

	private static PostgresServer server;

	private static HikariDataSource dataSource;

	@BeforeAll
	static void start() {
		server = PostgresServer.start();
		dataSource = server.newDataSource();
		AbstractJdbcBackendTests.createSchema(dataSource, "postgresql");
	}

	@AfterAll
	static void stop() {
		dataSource.close();
		server.close();
	}

	@Test
	void databaseRestartFailsCallersAndTheBackendRecovers() throws Exception {
		JdbcLockBackend backend = new JdbcLockBackend(dataSource);
		String held = "restart:" + UUID.randomUUID();
		String owner = UUID.randomUUID().toString();
		AcquireResult before = backend.tryAcquire(held, owner, Duration.ofMinutes(5));
		assertThat(before.acquired()).isTrue();
		server.stop();
		try {
			assertThatExceptionOfType(LockBackendException.class)
				.isThrownBy(() -> backend.tryAcquire("restart:" + UUID.randomUUID(), owner, Duration.ofSeconds(10)))
				.withMessageContaining("could not acquire");
			assertThatExceptionOfType(LockBackendException.class)
				.isThrownBy(() -> backend.release(held, owner));
		}
		finally {
			server.startAgain();
		}
		// pooled connections died with the server: calls fail until the pool replaces them
		AcquireResult after = null;
		long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
		while (after == null && System.nanoTime() < deadline) {
			try {
				after = backend.tryAcquire(held, UUID.randomUUID().toString(), Duration.ofSeconds(10));
			}
			catch (LockBackendException ex) {
				Thread.sleep(100);
			}
		}
		assertThat(after).isNotNull();
		// the table is durable: the lock taken before the restart is still held, and later tokens are larger
		assertThat(after.acquired()).isFalse();
		assertThat(backend.release(held, owner)).isTrue();
		AcquireResult next = backend.tryAcquire(held, UUID.randomUUID().toString(), Duration.ofSeconds(10));
		assertThat(next.acquired()).isTrue();
		assertThat(next.fencingToken()).isGreaterThan(before.fencingToken());
	}

}
