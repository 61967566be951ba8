package dev.holdfast.docs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's "Testing your application" example is {@code com.example.OrderServiceTests},
 * which this build runs: the README shows that file unchanged but for tabs written as four spaces
 * (as the README's other examples are). {@link ReadmeSnippetsTests} compiles the README's copy.
 */
class ReadmeTestingExampleTests {

	@Test
	void readmeShowsTheExampleTestThatRuns() throws IOException {
		String example = Files.readString(Path.of("src/test/java/com/example/OrderServiceTests.java"))
			.replace("\t", "    ");
		assertThat(Files.readString(Path.of("../README.md"))).contains("```java\n" + example + "```\n");
	}

}
