package dev.holdfast.autoconfigure;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Every backend whose server does not answer at startup is reported alike: the context starts
 * and one WARN names the settings to check, or, with {@code holdfast.fail-fast=true}, the startup
 * fails with Holdfast's failure analysis, never with a bare stack trace of the client library.
 */
@ExtendWith(OutputCaptureExtension.class)
class UnreachableBackendAtStartupTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner().withConfiguration(
			AutoConfigurations.of(DataRedisAutoConfiguration.class, DataSourceAutoConfiguration.class,
					HoldfastAutoConfiguration.class));

	@ParameterizedTest
	@ValueSource(strings = { "redis", "redlock", "zookeeper", "jdbc" })
	void unreachableBackendIsAWarningNamingTheSettingsToCheck(String backend, CapturedOutput output) {
		this.runner.withPropertyValues(unreachable(backend)).run((context) -> {
			assertThat(context).hasNotFailed();
			await().atMost(Duration.ofSeconds(20))
				.until(() -> output.toString()
					.contains("Holdfast could not reach its " + backend + " backend at startup"));
			assertThat(output).contains("Check " + settings(backend))
				.contains("set holdfast.fail-fast=true to fail the startup instead");
		});
	}

	@ParameterizedTest
	@ValueSource(strings = { "redis", "redlock", "zookeeper", "jdbc" })
	void unreachableBackendFailsTheStartupWithFailFast(String backend) {
		this.runner.withPropertyValues(unreachable(backend)).withPropertyValues("holdfast.fail-fast=true").run((context) -> {
			assertThat(context).hasFailed();
			FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
			assertThat(analysis).as("Holdfast's analysis of %s", context.getStartupFailure()).isNotNull();
			assertThat(analysis.getDescription())
				.startsWith("Holdfast could not reach its " + backend + " backend at startup");
			assertThat(analysis.getAction()).contains("Check " + settings(backend))
				.contains("holdfast.fail-fast=false");
		});
	}

	private static String[] unreachable(String backend) {
		String port = Integer.toString(unusedPort());
		List<String> properties = new ArrayList<>(List.of("holdfast.backend=" + backend));
		switch (backend) {
			case "redis" -> properties.addAll(List.of("spring.data.redis.port=" + port, "spring.data.redis.timeout=500ms"));
			case "redlock" -> properties.addAll(List.of("holdfast.redlock.nodes=redis://127.0.0.1:" + port,
					"holdfast.redlock.connect-timeout=500ms"));
			case "zookeeper" -> properties.addAll(List.of("holdfast.zookeeper.connect-string=127.0.0.1:" + port,
					"holdfast.zookeeper.connection-timeout=500ms", "holdfast.zookeeper.retry.max-retries=0"));
			case "jdbc" -> properties.addAll(List.of("spring.datasource.url=jdbc:postgresql://127.0.0.1:" + port + "/test",
					"spring.datasource.username=postgres", "spring.datasource.hikari.connection-timeout=500",
					"holdfast.jdbc.initialize-schema=always"));
			default -> throw new IllegalArgumentException(backend);
		}
		return properties.toArray(String[]::new);
	}

	/** The settings the messages name first for {@code backend}. */
	private static String settings(String backend) {
		return switch (backend) {
			case "redis" -> "spring.data.redis.*";
			case "redlock" -> "holdfast.redlock.nodes";
			case "zookeeper" -> "holdfast.zookeeper.*";
			case "jdbc" -> "spring.datasource.*";
			default -> throw new IllegalArgumentException(backend);
		};
	}

	private static int unusedPort() {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
		catch (IOException ex) {
			throw new IllegalStateException(ex);
		}
	}

}
