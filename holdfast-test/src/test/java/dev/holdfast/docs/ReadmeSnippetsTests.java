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

import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Compiles every {@code ```java} block of the repository's README.md exactly as shown, so that a
 * reader can copy it: its imports name where each type lives.
 * <p>
 * The convention for snippets: each {@code ```java} block is a whole compilation unit (a
 * package, its imports, one top-level type), possibly indented inside a list item. A snippet in
 * package {@code com.example} may use, without importing them, the application types declared in
 * this module's test sources under {@code com.example} ({@code Order}, {@code Warehouse}, ...):
 * they stand for the reader's own code. A block that is not Java (configuration, shell) uses
 * another fence language. The classpath is this module's test classpath: Holdfast, the test
 * kit, Spring Boot, Spring Data Redis, JDBC.
 */
class ReadmeSnippetsTests {

	private static final Pattern FENCE = Pattern.compile("^( *)```java\\s*$");

	private static final Pattern TYPE = Pattern.compile("(?m)^\\s*public\\s+(?:final\\s+|abstract\\s+)*"
			+ "(?:class|interface|record|enum|@interface)\\s+(\\w+)");

	@TempDir
	Path classes;

	@TestFactory
	Stream<DynamicTest> everyJavaSnippetCompilesAsShown() throws IOException {
		Path readme = readme();
		List<Snippet> snippets = snippets(Files.readAllLines(readme, StandardCharsets.UTF_8));
		assertThat(snippets).as("java snippets in " + readme).isNotEmpty();
		return snippets.stream()
			.map((snippet) -> DynamicTest.dynamicTest("README.md line " + snippet.line(), () -> compile(snippet)));
	}

	private void compile(Snippet snippet) throws IOException {
		Matcher type = TYPE.matcher(snippet.source());
		assertThat(type.find()).as("README.md line %d declares a public top-level type", snippet.line()).isTrue();
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
			.map((diagnostic) -> "README.md line " + (snippet.line() + diagnostic.getLineNumber()) + ": "
					+ diagnostic.getMessage(Locale.ROOT))
			.collect(Collectors.joining("\n"));
		assertThat(compiled).as("README.md line %d compiles:%n%s", snippet.line(), errors).isTrue();
	}

	/** The README at the root of the repository; tests run in the module's directory. */
	private static Path readme() {
		for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
			if (Files.isRegularFile(dir.resolve("README.md")) && Files.isRegularFile(dir.resolve("mvnw"))) {
				return dir.resolve("README.md");
			}
		}
		throw new IllegalStateException("No README.md above " + Path.of("").toAbsolutePath());
	}

	static List<Snippet> snippets(List<String> lines) {
		List<Snippet> snippets = new ArrayList<>();
		for (int i = 0; i < lines.size(); i++) {
			Matcher fence = FENCE.matcher(lines.get(i));
			if (!fence.matches()) {
				continue;
			}
			String indent = fence.group(1);
			StringBuilder source = new StringBuilder();
			int start = i + 1;
			for (i = start; i < lines.size() && !lines.get(i).trim().equals("```"); i++) {
				String line = lines.get(i);
				source.append(line.startsWith(indent) ? line.substring(indent.length()) : line).append('\n');
			}
			snippets.add(new Snippet(start, source.toString()));
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

	/** A snippet and the README line (1-based) just before its first line. */
	record Snippet(int line, String source) {
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
