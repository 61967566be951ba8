package dev.holdfast.jdbc;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.jdbc.datasource.SimpleDriverDataSource;

import dev.holdfast.LockConfigurationException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

class JdbcLockBackendTableNameTests {

	@ParameterizedTest
	@ValueSource(strings = { "holdfast_lock", "Locks", "_x1", "app.holdfast_lock" })
	void identifiersAreAccepted(String name) {
		assertThat(new JdbcLockBackend(new SimpleDriverDataSource(), name, Duration.ofSeconds(1)).getTableName())
			.isEqualTo(name);
	}

	@ParameterizedTest
	@ValueSource(strings = { "", "1locks", "lock-table", "lock table", "locks;DROP TABLE users", "a.b.c", "\"locks\"",
			"locks--", "sch\u00e9ma" })
	void anythingElseIsRejectedNamingTheProperty(String name) {
		assertThatExceptionOfType(LockConfigurationException.class)
			.isThrownBy(() -> new JdbcLockBackend(new SimpleDriverDataSource(), name, Duration.ofSeconds(1)))
			.withMessageContaining("'" + name + "'")
			.withMessageContaining("holdfast.jdbc.table-name")
			.satisfies((ex) -> assertThat(ex.getAction()).startsWith("Set holdfast.jdbc.table-name"));
	}

	@Test
	void overlongNamesAreRejected() {
		assertThatExceptionOfType(LockConfigurationException.class).isThrownBy(
				() -> new JdbcLockBackend(new SimpleDriverDataSource(), "t".repeat(64), Duration.ofSeconds(1)));
	}

}
