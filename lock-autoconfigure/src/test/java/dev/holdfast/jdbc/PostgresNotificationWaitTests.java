package dev.holdfast.jdbc;

import java.sql.Connection;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;

import dev.holdfast.test.server.PostgresServer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The driver's private fields that {@link PostgresNotificationWait} adjusts exist in the managed
 * pgjdbc version, so that a driver upgrade that renames them fails here instead of making every
 * release notification 1 ms late unnoticed; the value replaced is given back.
 */
class PostgresNotificationWaitTests {

	@Test
	void driverFieldsResolveAndTheReplacedValueIsRestored() throws Exception {
		assertThat(PostgresNotificationWait.available()).as("pgjdbc's pgStream and nextStreamAvailableCheckTime")
			.isTrue();
		try (HikariDataSource dataSource = PostgresServer.shared().newDataSource();
				Connection connection = dataSource.getConnection()) {
			PGConnection pg = connection.unwrap(PGConnection.class);
			PostgresNotificationWait.Skipped first = PostgresNotificationWait.skipTrailingRead(pg);
			assertThat(first).as("adjusted on a real connection").isNotNull();
			assertThat(first.previous()).isNotEqualTo(Long.MAX_VALUE);
			PostgresNotificationWait.Skipped second = PostgresNotificationWait.skipTrailingRead(pg);
			assertThat(second).isNotNull();
			assertThat(second.previous()).as("set to the far future").isEqualTo(Long.MAX_VALUE);
			PostgresNotificationWait.restore(second);
			PostgresNotificationWait.restore(first);
			PostgresNotificationWait.Skipped third = PostgresNotificationWait.skipTrailingRead(pg);
			assertThat(third.previous()).as("the value replaced, given back").isEqualTo(first.previous());
			PostgresNotificationWait.restore(third);
		}
	}

}
