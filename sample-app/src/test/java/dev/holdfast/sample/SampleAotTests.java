package dev.holdfast.sample;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The sample as an ahead-of-time processed application: the build runs {@code process-aot}
 * before the tests, and this test starts the application in its own JVM with
 * {@code -Dspring.aot.enabled=true}, on what that generated, then uses every feature over HTTP:
 * a locked call, the scheduled job (one run per tick), the {@code locks} endpoint and the lock
 * metrics.
 */
class SampleAotTests {

	private static final Pattern PORT = Pattern.compile("Tomcat started on port (\\d+)");

	private final StringBuffer output = new StringBuffer();

	private final HttpClient http = HttpClient.newHttpClient();

	private Process process;

	@AfterEach
	void stop() throws Exception {
		if (this.process != null) {
			this.process.destroy();
			if (!this.process.waitFor(30, TimeUnit.SECONDS)) {
				this.process.destroyForcibly();
			}
		}
	}

	@Test
	void aotProcessedApplicationLocksSchedulesAndReports() throws Exception {
		String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
		this.process = new ProcessBuilder(List.of(java, "-Dspring.aot.enabled=true", "-cp",
				System.getProperty("java.class.path"), SampleApplication.class.getName(), "--server.port=0",
				"--spring.datasource.url=jdbc:h2:mem:sample-aot;DB_CLOSE_DELAY=-1", "--sample.job.cron=* * * * * *"))
			.redirectErrorStream(true)
			.start();
		Thread reader = new Thread(this::readOutput, "sample-aot-output");
		reader.setDaemon(true);
		reader.start();
		int port = await().atMost(Duration.ofMinutes(2))
			.alias("the AOT-processed application listens")
			.until(this::port, (found) -> found > 0 || !this.process.isAlive());
		assertThat(this.process.isAlive()).as("the application runs; its output:%n%s", this.output).isTrue();
		assertThat(this.output).contains("Starting AOT-processed SampleApplication");
		// Tomcat listens before the application is ready: the stock rows are inserted when it is
		await().atMost(Duration.ofMinutes(1))
			.alias("the application is ready (its stock inserted)")
			.until(() -> send(port, HttpRequest.newBuilder(uri(port, "/actuator/health/readiness")).build())
				.statusCode() == 200);

		HttpResponse<String> reserved = send(port, HttpRequest.newBuilder(uri(port, "/reserve/apple"))
			.POST(HttpRequest.BodyPublishers.noBody())
			.build());
		assertThat(reserved.statusCode()).as("POST /reserve/apple answered %s; the application's output:%n%s",
				reserved.body(), this.output)
			.isEqualTo(200);
		assertThat(reserved.body()).contains("\"status\":\"RESERVED\"").contains("\"fencingToken\":");
		assertThat(get(port, "/stats")).contains("\"inventory\":{\"acquired\":1");

		String runs = await().atMost(Duration.ofSeconds(30))
			.alias("at least two ticks recorded")
			.until(() -> get(port, "/runs"), (body) -> body.split("\"tick\"").length > 2);
		assertThat(runs).contains("\"runs\":1").doesNotContain("\"runs\":2");

		assertThat(get(port, "/actuator/locks")).contains("\"backend\":\"jdbc\"").contains("\"leases\":[");
		assertThat(get(port, "/actuator/metrics/holdfast.lock.acquire")).contains("\"name\":\"holdfast.lock.acquire\"");
	}

	private int port() {
		Matcher matcher = PORT.matcher(this.output);
		return matcher.find() ? Integer.parseInt(matcher.group(1)) : 0;
	}

	private void readOutput() {
		try (BufferedReader lines = new BufferedReader(
				new InputStreamReader(this.process.getInputStream(), StandardCharsets.UTF_8))) {
			String line;
			while ((line = lines.readLine()) != null) {
				this.output.append(line).append('\n');
			}
		}
		catch (Exception ex) {
			// the process ended
		}
	}

	private String get(int port, String path) throws Exception {
		HttpResponse<String> response = send(port, HttpRequest.newBuilder(uri(port, path)).build());
		assertThat(response.statusCode()).as(path).isEqualTo(200);
		return response.body();
	}

	private HttpResponse<String> send(int port, HttpRequest request) throws Exception {
		return this.http.send(request, HttpResponse.BodyHandlers.ofString());
	}

	private static URI uri(int port, String path) {
		return URI.create("http://127.0.0.1:" + port + path);
	}

}
