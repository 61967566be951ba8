package dev.holdfast.jdbc;

import java.time.Duration;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.test.server.PostgresServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

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
	void silentDatabaseFailsCallersWithinTheQueryTimeout() throws Exception {
		JdbcLockBackend backend = new JdbcLockBackend(dataSource, JdbcLockBackend.DEFAULT_TABLE_NAME,
				Duration.ofSeconds(1));
		String key = "pause:" + UUID.randomUUID();
		String owner = UUID.randomUUID().toString();
		assertThat(backend.tryAcquire(key, owner, Duration.ofMinutes(1)).acquired()).isTrue();
		server.pause();
		try {
			long start = System.nanoTime();
			assertThatExceptionOfType(LockBackendException.class)
				.isThrownBy(() -> backend.release(key, owner));
			// bounded, not hanging: the pool's own check of the borrowed connection (up to its 2 s
			// connection timeout) plus the 1 s network timeout, with room for a loaded machine
			// (5.017 s was seen at load average 20)
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(8));
		}
		finally {
			server.resume();
		}
		// the failed release may or may not have reached the database: either way the owner can
		// release now, and the lock is free for another
		eventually(() -> backend.release(key, owner));
		assertThat(backend.tryAcquire(key, UUID.randomUUID().toString(), Duration.ofSeconds(10)).acquired()).isTrue();
	}

	/**
	 * The health check, the startup table check and the first call's dialect detection are
	 * bounded like lock statements. Before: they ran without the network timeout, and on a
	 * database stopped with SIGSTOP the statement timeout's cancel request never completed, so
	 * they hung.
	 */
	@Test
	void healthAndTableChecksFailWithinTheQueryTimeoutOnASilentDatabase() {
		JdbcLockBackend warm = new JdbcLockBackend(dataSource, JdbcLockBackend.DEFAULT_TABLE_NAME,
				Duration.ofSeconds(1));
		JdbcLockBackend fresh = new JdbcLockBackend(dataSource, JdbcLockBackend.DEFAULT_TABLE_NAME,
				Duration.ofSeconds(1));
		warm.checkTable();
		// the pool now hands out the connection it just used without validating it
		server.pause();
		try {
			assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
				long start = System.nanoTime();
				assertThatExceptionOfType(LockBackendException.class).isThrownBy(fresh::checkHealth);
				// bounded, not hanging: the pool's own check of the borrowed connection (up to its 2 s
			// connection timeout) plus the 1 s network timeout, with room for a loaded machine
			// (5.017 s was seen at load average 20)
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(8));
				start = System.nanoTime();
				assertThatExceptionOfType(LockBackendException.class).isThrownBy(warm::checkHealth);
				// bounded, not hanging: the pool's own check of the borrowed connection (up to its 2 s
			// connection timeout) plus the 1 s network timeout, with room for a loaded machine
			// (5.017 s was seen at load average 20)
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(8));
				start = System.nanoTime();
				assertThatExceptionOfType(LockBackendException.class).isThrownBy(warm::checkTable);
				// bounded, not hanging: the pool's own check of the borrowed connection (up to its 2 s
			// connection timeout) plus the 1 s network timeout, with room for a loaded machine
			// (5.017 s was seen at load average 20)
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(8));
			});
		}
		finally {
			server.resume();
		}
		assertThat(eventually(warm::checkHealth).up()).isTrue();
	}

	private static <T> T eventually(java.util.function.Supplier<T> call) {
		return await().atMost(Duration.ofSeconds(30))
			.ignoreException(LockBackendException.class)
			.until(call::get, (result) -> true);
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
		AcquireResult after = eventually(
				() -> backend.tryAcquire(held, UUID.randomUUID().toString(), Duration.ofSeconds(10)));
		// the table is durable: the lock taken before the restart is still held, and later tokens are larger
		assertThat(after.acquired()).isFalse();
		assertThat(backend.release(held, owner)).isTrue();
		AcquireResult next = backend.tryAcquire(held, UUID.randomUUID().toString(), Duration.ofSeconds(10));
		assertThat(next.acquired()).isTrue();
		assertThat(next.fencingToken()).isGreaterThan(before.fencingToken());
	}

}
