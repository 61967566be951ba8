package dev.holdfast.docs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The examples that the docs show as tests are test sources of package {@code com.example}, which
 * this build runs: docs/testing.md shows {@code OrderServiceTests}, and docs/recipes.md shows
 * {@code CatalogRefreshTests} and the {@code CatalogRefresh} it tests. Each page shows the file
 * unchanged but for tabs written as four spaces (as the other examples are);
 * {@link ReadmeSnippetsTests} compiles the pages' copies.
 */
class ReadmeTestingExampleTests {

	@Test
	void testingPageShowsTheExampleTestThatRuns() throws IOException {
		assertThat(Files.readString(Path.of("../docs/testing.md"))).contains(block("OrderServiceTests"));
	}

	@Test
	void recipesPageShowsTheTestedRecipeAndItsTest() throws IOException {
		assertThat(Files.readString(Path.of("../docs/recipes.md"))).contains(block("CatalogRefresh"))
			.contains(block("CatalogRefreshTests"));
	}

	/** A test source of package com.example as a page shows it: a java block, tabs as four spaces. */
	static String block(String type) throws IOException {
		String source = Files.readString(Path.of("src/test/java/com/example/" + type + ".java")).replace("\t", "    ");
		return "```java\n" + source + "```\n";
	}

}
