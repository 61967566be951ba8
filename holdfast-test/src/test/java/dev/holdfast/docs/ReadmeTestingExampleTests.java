package dev.holdfast.docs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The example of docs/testing.md ("Testing your application") is {@code com.example.OrderServiceTests},
 * which this build runs: the page shows that file unchanged but for tabs written as four spaces
 * (as the other examples are). {@link ReadmeSnippetsTests} compiles the page's copy.
 */
class ReadmeTestingExampleTests {

	@Test
	void testingPageShowsTheExampleTestThatRuns() throws IOException {
		assertThat(Files.readString(Path.of("../docs/testing.md"))).contains(block("OrderServiceTests"));
	}

	/** A test source of package com.example as a page shows it: a java block, tabs as four spaces. */
	static String block(String type) throws IOException {
		String source = Files.readString(Path.of("src/test/java/com/example/" + type + ".java")).replace("\t", "    ");
		return "```java\n" + source + "```\n";
	}

}
