package dev.holdfast.jdbc;

import java.time.Duration;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import org.springframework.jdbc.datasource.SimpleDriverDataSource;

import dev.holdfast.LockConfigurationException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatNoException;

/**
 * The sweep delay must outlast any lock statement by far: at least a minute and ten query
 * timeouts.
 */
class JdbcLockBackendSweepAfterTests {

	@ParameterizedTest
	@CsvSource({ "PT1M, PT1S", "PT1M, PT6S", "PT100S, PT10S", "PT1H, PT5S" })
	void longEnoughDelaysAreAccepted(Duration sweepAfter, Duration queryTimeout) {
		assertThatNoException().isThrownBy(() -> backend(sweepAfter, queryTimeout));
	}

	@ParameterizedTest
	@CsvSource({ "PT59S, PT1S, 60s", "PT59.5S, PT5S, 60s", "PT99S, PT10S, 100s", "PT0S, PT0.1S, 60s",
			"-PT1H, PT5S, 60s" })
	void shorterDelaysAreRejectedNamingThePropertyAndTheMinimum(Duration sweepAfter, Duration queryTimeout,
			String minimum) {
		assertThatExceptionOfType(LockConfigurationException.class)
			.isThrownBy(() -> backend(sweepAfter, queryTimeout))
			.withMessageContaining("holdfast.jdbc.sweep-after is ")
			.withMessageContaining("at least " + minimum)
			.satisfies((ex) -> assertThat(ex.getAction())
				.isEqualTo("Set holdfast.jdbc.sweep-after to at least " + minimum
						+ " (the default is 3600s), or remove it."));
	}

	@Test
	void missingDelayIsRejected() {
		assertThatExceptionOfType(LockConfigurationException.class)
			.isThrownBy(() -> JdbcSweeper.validate(null, Duration.ofSeconds(5)))
			.withMessageContaining("holdfast.jdbc.sweep-after is not set");
	}

	private static JdbcLockBackend backend(Duration sweepAfter, Duration queryTimeout) {
		return new JdbcLockBackend(new SimpleDriverDataSource(), JdbcLockBackend.DEFAULT_TABLE_NAME, queryTimeout,
				sweepAfter);
	}

}
