package dev.holdfast.jdbc;

import java.time.Duration;
import java.util.UUID;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.test.server.PostgresServer;

import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * An acquisition whose outcome the caller cannot know: PostgreSQL is paused (SIGSTOP) when the
 * statement is sent, the caller fails after the query timeout, and the database commits the
 * statement when it resumes, taking the lock for an owner token that the caller never got. The
 * engine releases it, owner-checked, so another client gets the lock promptly after the
 * database resumes instead of after the one-minute lease.
 */
class PostgresUnknownOutcomeTests {

	private static final Duration LEASE = Duration.ofMinutes(1);

	private static PostgresServer server;

	private static HikariDataSource dataSource;

	private static HikariDataSource otherDataSource;

	@BeforeAll
	static void start() {
		server = PostgresServer.start();
		dataSource = server.newDataSource();
		otherDataSource = server.newDataSource();
		AbstractJdbcBackendTests.createSchema(dataSource, "postgresql");
	}

	@AfterAll
	static void stop() {
		server.resume();
		dataSource.close();
		otherDataSource.close();
		server.close();
	}

	@Test
	void timedOutAcquisitionIsReleasedOnceTheDatabaseResumes() {
		JdbcLockBackend backend = new JdbcLockBackend(dataSource, JdbcLockBackend.DEFAULT_TABLE_NAME,
				Duration.ofSeconds(1));
		JdbcLockBackend other = new JdbcLockBackend(otherDataSource, JdbcLockBackend.DEFAULT_TABLE_NAME,
				Duration.ofSeconds(1));
		LockOptions options = LockOptions.defaults().waitTime(Duration.ZERO).leaseTime(LEASE);
		try (DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults())) {
			// Connected and the dialect known: the statement reaches the database's socket.
			template.acquire("warm-up-" + UUID.randomUUID(), null, options).close();
			String name = "unknown-" + UUID.randomUUID();
			String key = template.keyFor(name, null);
			server.pause();
			try {
				assertThatExceptionOfType(LockBackendException.class)
					.isThrownBy(() -> template.acquire(name, null, options));
			}
			finally {
				server.resume();
			}
			long resumed = System.nanoTime();
			await().atMost(Duration.ofSeconds(15))
				.ignoreException(LockBackendException.class)
				.until(() -> other.tryAcquire(key, "other-" + UUID.randomUUID(), LEASE).acquired());
			System.out.println("Lock of the failed acquisition free " + (System.nanoTime() - resumed) / 1_000_000
					+ " ms after PostgreSQL resumed");
		}
	}

}
