package dev.holdfast.jdbc;

import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.jdbc.core.JdbcTemplate;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.TickClaims.TickClaim;
import dev.holdfast.test.server.BlackholeProxy;
import dev.holdfast.test.server.PostgresServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * An acquisition whose outcome the caller cannot know: PostgreSQL is paused (SIGSTOP) when the
 * statement is sent, the caller fails after the query timeout, and the database commits the
 * statement when it resumes, taking the lock for an owner token that the caller never got. The
 * engine releases it, owner-checked, so another client gets the lock promptly after the
 * database resumes instead of after the one-minute lease. And a tick claim whose answer is lost:
 * the call fails, nothing sends it again.
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


	@Test
	void tickClaimWhoseAnswerIsLostFailsTheCallAndIsNotSentAgain() throws Exception {
		try (BlackholeProxy proxy = new BlackholeProxy(server.port());
				HikariDataSource proxied = server.newDataSource()) {
			proxied.setJdbcUrl("jdbc:postgresql://127.0.0.1:" + proxy.port() + "/postgres");
			JdbcLockBackend backend = new JdbcLockBackend(proxied, JdbcLockBackend.DEFAULT_TABLE_NAME,
					Duration.ofSeconds(5));
			JdbcLockBackend other = new JdbcLockBackend(otherDataSource, JdbcLockBackend.DEFAULT_TABLE_NAME,
					Duration.ofSeconds(5));
			Instant tick = Instant.parse("2030-01-01T00:00:00Z");
			Duration anyTime = Duration.ofDays(36500);
			// connected and the dialect known: the claim is one statement
			assertThat(backend.claimTick("holdfast:warm-" + UUID.randomUUID(), tick, anyTime, LEASE).outcome())
				.isEqualTo(TickClaim.Outcome.CLAIMED);
			String key = "holdfast:job-" + UUID.randomUUID();
			JdbcTemplate jdbc = new JdbcTemplate(otherDataSource);
			proxy.dropAnswersFrom(key);
			ExecutorService pool = Executors.newSingleThreadExecutor();
			try {
				Future<TickClaim> claim = pool.submit(() -> backend.claimTick(key, tick, anyTime, LEASE));
				await().atMost(Duration.ofSeconds(5)).until(proxy::dropping);
				await().atMost(Duration.ofSeconds(5))
					.until(() -> jdbc.queryForObject("SELECT count(*) FROM holdfast_lock WHERE lock_key = ?",
							Integer.class, JdbcKeys.tickRecordKey(key)) == 1);
				proxy.dropAnswers(false);
				proxy.cutConnections();
				// the driver does not send the statement again: the call fails (the scheduler logs
				// the job's name at WARN and skips the tick as backend-failed)
				assertThatThrownBy(() -> claim.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
					.cause()
					.isInstanceOf(LockBackendException.class);
			}
			finally {
				pool.shutdownNow();
			}
			assertThat(other.claimTick(key, tick, anyTime, LEASE).outcome()).as("the tick, recorded by the lost claim")
				.isEqualTo(TickClaim.Outcome.TAKEN);
		}
	}

}
