package dev.holdfast.sample.demo;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo's exit status on bad options. Whole runs of the demo, on its instances' JVMs, are the
 * README commands that {@code .ci/readme-commands} runs as written.
 */
class DemoTests {

	@Test
	void badOptionsExitWithUsage() {
		ByteArrayOutputStream buffer = new ByteArrayOutputStream();
		int status = Demo.run(new PrintStream(buffer, true, StandardCharsets.UTF_8), "--instances=zero");
		assertThat(status).isEqualTo(2);
		assertThat(buffer.toString(StandardCharsets.UTF_8))
			.contains("--instances must be a whole number from 1 to 9, was 'zero'")
			.contains("Usage: Demo");
	}

}
