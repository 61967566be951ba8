package dev.holdfast.docs;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.SimpleJavaFileObject;
import javax.tools.ToolProvider;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicContainer;
import org.junit.jupiter.api.DynamicNode;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * Compiles every {@code ```java} block of the repository's README.md and of every page under
 * {@code docs/} exactly as shown, so that a reader can copy it: its imports name where each type
 * lives.
 * <p>
 * The convention for snippets: each {@code ```java} block is a whole compilation unit (a
 * package, its imports, one top-level type), possibly indented inside a list item. A snippet in
 * package {@code com.example} may use, without importing them, the application types declared in
 * this module's test sources under {@code com.example} ({@code Order}, {@code Warehouse}, ...):
 * they stand for the reader's own code. A block that is not Java (configuration, shell, Kotlin)
 * uses another fence language.
 * <p>
 * A block that is deliberately a fragment (a few statements, not a compilation unit) is fenced
 * {@code ```java fragment}: it is reported as a test that was not run, with the reason, never
 * skipped without a word. Any other info string that starts with {@code java} fails, so that no
 * Java block escapes this test by a typo. The classpath is this module's test classpath:
 * Holdfast, the test kit, Spring Boot, Spring Data Redis, JDBC, Reactor.
 */
class ReadmeSnippetsTests {

	private static final Pattern FENCE = Pattern.compile("^( *)```(\\S*)(.*)$");

	private static final String FRAGMENT = "fragment";

	private static final Pattern TYPE = Pattern.compile("(?m)^\\s*public\\s+(?:final\\s+|abstract\\s+)*"
			+ "(?:class|interface|record|enum|@interface)\\s+(\\w+)");

	@TempDir
	Path classes;

	@TestFactory
	Stream<DynamicNode> everyJavaSnippetCompilesAsShown() throws IOException {
		Path root = repositoryRoot();
		List<Path> pages = pages(root);
		assertThat(pages).as("README.md and the pages under docs/").contains(root.resolve("README.md"));
		List<DynamicNode> nodes = new ArrayList<>();
		int compiled = 0;
		for (Path page : pages) {
			String name = root.relativize(page).toString().replace(File.separatorChar, '/');
			List<Snippet> snippets = snippets(name, Files.readAllLines(page, StandardCharsets.UTF_8));
			compiled += (int) snippets.stream().filter((snippet) -> !snippet.fragment()).count();
			if (!snippets.isEmpty()) {
				nodes.add(DynamicContainer.dynamicContainer(name, snippets.stream().map(this::test)));
			}
		}
		assertThat(compiled).as("java snippets in README.md and docs/").isPositive();
		return nodes.stream();
	}

	@Test
	void aFragmentIsMarkedAndAnyOtherJavaFenceIsRefused() {
		List<Snippet> snippets = snippets("page.md",
				List.of("```java", "class A {}", "```", "```java fragment", "lease.close();", "```", "```kotlin",
						"fun f() {}", "```", "```bash", "./mvnw", "```"));
		assertThat(snippets).extracting(Snippet::line).containsExactly(1, 4);
		assertThat(snippets).extracting(Snippet::fragment).containsExactly(false, true);
		assertThatIllegalStateException()
			.isThrownBy(() -> snippets("page.md", List.of("text", "```Java", "class A {}", "```")))
			.withMessageContaining("page.md line 2");
		assertThatIllegalStateException()
			.isThrownBy(() -> snippets("page.md", List.of("```java title=A.java", "class A {}", "```")))
			.withMessageContaining("```java fragment");
	}

	private DynamicTest test(Snippet snippet) {
		return DynamicTest.dynamicTest(snippet.where(), () -> {
			Assumptions.assumeFalse(snippet.fragment(),
					() -> snippet.where() + " is marked as a fragment (```java fragment): it is not compiled");
			compile(snippet);
		});
	}

	private void compile(Snippet snippet) throws IOException {
		Matcher type = TYPE.matcher(snippet.source());
		assertThat(type.find()).as("%s declares a public top-level type", snippet.where()).isTrue();
		JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
		DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
		Path out = Files.createTempDirectory(this.classes, "snippet");
		List<String> options = List.of("--release", "17", "-proc:none", "-classpath", classpath(), "-d",
				out.toString());
		boolean compiled = compiler
			.getTask(null, null, diagnostics, options, null, List.of(new Source(type.group(1), snippet.source())))
			.call();
		String errors = diagnostics.getDiagnostics()
			.stream()
			.filter((diagnostic) -> diagnostic.getKind() == Diagnostic.Kind.ERROR)
			.map((diagnostic) -> snippet.page() + " line " + (snippet.line() + diagnostic.getLineNumber()) + ": "
					+ diagnostic.getMessage(Locale.ROOT))
			.collect(Collectors.joining("\n"));
		assertThat(compiled).as("%s compiles:%n%s", snippet.where(), errors).isTrue();
	}

	/** The directory that holds README.md and mvnw; tests run in the module's directory. */
	private static Path repositoryRoot() {
		for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
			if (Files.isRegularFile(dir.resolve("README.md")) && Files.isRegularFile(dir.resolve("mvnw"))) {
				return dir;
			}
		}
		throw new IllegalStateException("No README.md above " + Path.of("").toAbsolutePath());
	}

	/** README.md, then every Markdown page under docs/, in name order. */
	private static List<Path> pages(Path root) throws IOException {
		List<Path> pages = new ArrayList<>();
		pages.add(root.resolve("README.md"));
		try (Stream<Path> docs = Files.walk(root.resolve("docs"))) {
			docs.filter((path) -> path.toString().endsWith(".md")).sorted().forEach(pages::add);
		}
		return pages;
	}

	/**
	 * The {@code ```java} and {@code ```java fragment} blocks of a page.
	 * @throws IllegalStateException for a fence whose info string starts with {@code java} and is
	 * neither of them
	 */
	static List<Snippet> snippets(String page, List<String> lines) {
		List<Snippet> snippets = new ArrayList<>();
		for (int i = 0; i < lines.size(); i++) {
			Matcher fence = FENCE.matcher(lines.get(i));
			if (!fence.matches()) {
				continue;
			}
			String language = fence.group(2);
			String rest = fence.group(3).trim();
			boolean java = language.equals("java") && rest.isEmpty();
			boolean fragment = language.equals("java") && rest.equals(FRAGMENT);
			if (!java && !fragment && language.toLowerCase(Locale.ROOT).startsWith("java")) {
				throw new IllegalStateException(page + " line " + (i + 1) + " opens a block with '```" + language
						+ (rest.isEmpty() ? "" : " " + rest) + "': write ```java for a compilation unit, which is "
						+ "compiled, or ```java fragment for a deliberate fragment");
			}
			String indent = fence.group(1);
			StringBuilder source = new StringBuilder();
			int start = i + 1;
			for (i = start; i < lines.size() && !lines.get(i).trim().equals("```"); i++) {
				String line = lines.get(i);
				source.append(line.startsWith(indent) ? line.substring(indent.length()) : line).append('\n');
			}
			if (java || fragment) {
				snippets.add(new Snippet(page, start, source.toString(), fragment));
			}
		}
		return snippets;
	}

	/** Surefire passes the test classpath in a property (its own class path is a manifest jar). */
	private static String classpath() {
		String surefire = System.getProperty("surefire.test.class.path");
		return (surefire != null && !surefire.isBlank()) ? surefire
				: System.getProperty("java.class.path").replace(File.pathSeparator + File.pathSeparator,
						File.pathSeparator);
	}

	/** A snippet, its page and the page's line (1-based) just before its first line. */
	record Snippet(String page, int line, String source, boolean fragment) {

		String where() {
			return this.page + " line " + this.line;
		}

	}

	private static final class Source extends SimpleJavaFileObject {

		private final String code;

		Source(String type, String code) {
			super(URI.create("string:///" + type + Kind.SOURCE.extension), Kind.SOURCE);
			this.code = code;
		}

		@Override
		public CharSequence getCharContent(boolean ignoreEncodingErrors) {
			return this.code;
		}

	}

}
