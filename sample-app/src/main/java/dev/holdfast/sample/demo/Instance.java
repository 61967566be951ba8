package dev.holdfast.sample.demo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

/**
 * One instance of the sample application that the demo started: a separate JVM, its HTTP port
 * and its log file.
 */
final class Instance {

	private static final JsonMapper json = JsonMapper.builder().build();

	private final String id;

	private final Path portFile;

	private final Path log;

	private final Process process;

	private final HttpClient http;

	private volatile int port;

	private Instance(String id, Path portFile, Path log, Process process, HttpClient http) {
		this.id = id;
		this.portFile = portFile;
		this.log = log;
		this.process = process;
		this.http = http;
	}

	/**
	 * Starts {@code java <jvmArgs> -cp <classpath> <mainClass> <appArgs>} with its output in
	 * {@code log}, on a port the server picks and writes to a file ({@code PORTFILE}). The
	 * command goes through an argument file, so a long class path fits.
	 */
	static Instance start(String id, Path log, List<String> jvmArgs, String classpath, String mainClass,
			List<String> appArgs, HttpClient http) throws IOException {
		List<String> lines = new ArrayList<>(jvmArgs);
		lines.add("-cp");
		lines.add(classpath);
		lines.add(mainClass);
		lines.addAll(appArgs);
		lines.add("--server.port=0");
		Path argFile = log.resolveSibling(id + ".args");
		Path portFile = log.resolveSibling(id + ".port");
		Files.deleteIfExists(portFile);
		Files.write(argFile, lines.stream().map(Instance::quote).toList(), StandardCharsets.UTF_8);
		String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
		ProcessBuilder builder = new ProcessBuilder(java, "@" + argFile).redirectErrorStream(true)
			.redirectOutput(log.toFile());
		builder.environment().put("PORTFILE", portFile.toString());
		return new Instance(id, portFile, log, builder.start(), http);
	}

	private static String quote(String arg) {
		return "\"" + arg.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
	}

	String id() {
		return this.id;
	}

	int port() {
		return this.port;
	}

	Path log() {
		return this.log;
	}

	boolean isAlive() {
		return this.process.isAlive();
	}

	/**
	 * Waits until the instance answers its health endpoint with {@code 200}.
	 * @throws IllegalStateException if the process exits or the timeout passes first
	 */
	void awaitReady(Duration timeout) throws InterruptedException {
		long deadline = System.nanoTime() + timeout.toNanos();
		while (System.nanoTime() < deadline) {
			if (!this.process.isAlive()) {
				throw new IllegalStateException("Instance " + this.id + " exited with status "
						+ this.process.exitValue() + " before it was ready; see " + this.log + ":\n" + logTail(30));
			}
			if (this.port == 0) {
				this.port = readPort();
			}
			if (this.port == 0) {
				Thread.sleep(250);
				continue;
			}
			try {
				HttpResponse<String> response = send(HttpRequest.newBuilder(uri("/actuator/health"))
					.timeout(Duration.ofSeconds(5))
					.build());
				if (response.statusCode() == 200) {
					return;
				}
			}
			catch (IOException ex) {
				// not listening yet
			}
			Thread.sleep(250);
		}
		throw new IllegalStateException("Instance " + this.id + " was not ready within " + timeout.toSeconds()
				+ " s; see " + this.log + ":\n" + logTail(30));
	}

	private int readPort() {
		try {
			String text = Files.readString(this.portFile, StandardCharsets.UTF_8).trim();
			return text.isEmpty() ? 0 : Integer.parseInt(text);
		}
		catch (IOException | NumberFormatException ex) {
			return 0; // not written yet, or half written
		}
	}

	/**
	 * {@code POST /reserve/{sku}}: the status code and the parsed body.
	 */
	HttpResponse<String> reserve(String sku) throws IOException, InterruptedException {
		return send(HttpRequest.newBuilder(uri("/reserve/" + sku))
			.timeout(Duration.ofSeconds(90))
			.POST(HttpRequest.BodyPublishers.noBody())
			.build());
	}

	/**
	 * {@code GET path} as JSON.
	 * @throws IllegalStateException if the answer is not {@code 200}
	 */
	JsonNode get(String path) throws IOException, InterruptedException {
		HttpResponse<String> response = send(HttpRequest.newBuilder(uri(path)).timeout(Duration.ofSeconds(30)).build());
		if (response.statusCode() != 200) {
			throw new IllegalStateException(
					"GET " + path + " on instance " + this.id + " answered " + response.statusCode() + ": "
							+ response.body());
		}
		return json.readTree(response.body());
	}

	/**
	 * {@code POST path} with no body, as JSON.
	 * @throws IllegalStateException if the answer is not {@code 200}
	 */
	JsonNode post(String path) throws IOException, InterruptedException {
		HttpResponse<String> response = send(HttpRequest.newBuilder(uri(path))
			.timeout(Duration.ofSeconds(30))
			.header("Content-Type", "application/json")
			.POST(HttpRequest.BodyPublishers.noBody())
			.build());
		if (response.statusCode() != 200) {
			throw new IllegalStateException(
					"POST " + path + " on instance " + this.id + " answered " + response.statusCode() + ": "
							+ response.body());
		}
		return json.readTree(response.body());
	}

	static JsonNode parse(String body) {
		return json.readTree(body);
	}

	private HttpResponse<String> send(HttpRequest request) throws IOException, InterruptedException {
		try {
			return this.http.send(request, HttpResponse.BodyHandlers.ofString());
		}
		catch (ConnectException ex) {
			throw new ConnectException("Instance " + this.id + " on port " + this.port + ": " + ex.getMessage());
		}
	}

	private URI uri(String path) {
		return URI.create("http://127.0.0.1:" + this.port + path);
	}

	/**
	 * Stops the JVM: a normal shutdown first, then forcibly after {@code grace}. Never throws.
	 */
	void stop(Duration grace) {
		if (!this.process.isAlive()) {
			return;
		}
		this.process.destroy();
		try {
			if (!this.process.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
				this.process.destroyForcibly();
				this.process.waitFor(10, TimeUnit.SECONDS);
			}
		}
		catch (InterruptedException ex) {
			this.process.destroyForcibly();
			Thread.currentThread().interrupt();
		}
	}

	/**
	 * Kills the JVM at once ({@code SIGKILL} on Unix): no shutdown, nothing released.
	 */
	void kill() throws InterruptedException {
		this.process.destroyForcibly();
		this.process.waitFor(10, TimeUnit.SECONDS);
	}

	/**
	 * The last {@code lines} lines of the log, indented.
	 */
	String logTail(int lines) {
		try {
			List<String> all = Files.readAllLines(this.log, StandardCharsets.UTF_8);
			return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()))
				.indent(4);
		}
		catch (IOException | UncheckedIOException ex) {
			return "    (log unreadable: " + ex.getMessage() + ")";
		}
	}

}
