package dev.holdfast.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

import org.springframework.asm.ClassReader;
import org.springframework.asm.ClassVisitor;
import org.springframework.asm.Handle;
import org.springframework.asm.MethodVisitor;
import org.springframework.asm.Opcodes;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The JDBC backend takes no time from the JVM, so a client whose clock is minutes off cannot
 * change who holds a lock or claims a tick: every expiry is computed and compared by the
 * database. This test reads the bytecode of every class of the package and fails if any of them
 * calls a JVM clock, directly or through a method reference. Instants and durations passed in
 * are data and may be read. Two classes are exempt, by name: {@code PostgresReleaseListener} and
 * its {@code PostgresListeningConnection} pace the liveness checks of the listening connection by
 * the monotonic clock; they only wake waiters (who then ask the database), and decide nothing
 * about who holds a lock or claims a tick.
 */
class JdbcLockBackendClockTests {

	@Test
	void backendClassesReadNoJvmClock() throws Exception {
		List<String> classes = packageClasses();
		assertThat(classes).as("classes of the package").contains("JdbcLockBackend.class", "JdbcLockDialect.class",
				"SqlClockDialect.class", "PostgreSqlDialect.class", "MySqlDialect.class", "H2Dialect.class",
				"GenericSqlDialect.class");
		List<String> clockCalls = new ArrayList<>();
		for (String file : classes) {
			if (!file.startsWith(PostgresReleaseListener.class.getSimpleName())
					&& !file.startsWith(PostgresListeningConnection.class.getSimpleName())) {
				clockCalls.addAll(clockCalls(file));
			}
		}
		assertThat(clockCalls).as("JVM clock calls in %s", classes).isEmpty();
	}

	@Test
	void scanFindsAClockCall() throws Exception {
		assertThat(clockCalls(ReadsClocks.class)).containsExactlyInAnyOrder("java/lang/System.nanoTime",
				"java/lang/System.currentTimeMillis", "java/time/Instant.now", "java/time/LocalDateTime.now",
				"java/time/Clock.instant", "java/util/Date.<init>()V");
	}

	/** Whether {@code owner.name} with {@code descriptor} reads a clock of the JVM. */
	static boolean readsClock(String owner, String name, String descriptor) {
		return (owner.equals("java/lang/System") && (name.equals("currentTimeMillis") || name.equals("nanoTime")))
				|| owner.equals("java/time/Clock") || owner.equals("java/time/InstantSource")
				|| (owner.startsWith("java/time/") && name.equals("now"))
				|| (owner.equals("java/util/Date") && name.equals("<init>") && descriptor.equals("()V"))
				|| (owner.equals("java/util/Calendar") && name.equals("getInstance"));
	}

	private static List<String> packageClasses() throws IOException, URISyntaxException {
		Path directory = Path.of(JdbcLockBackend.class.getResource("JdbcLockBackend.class").toURI()).getParent();
		try (Stream<Path> files = Files.list(directory)) {
			return files.map((file) -> file.getFileName().toString()).filter((file) -> file.endsWith(".class")).toList();
		}
	}

	private static List<String> clockCalls(String file) {
		try (InputStream in = JdbcLockBackend.class.getResourceAsStream(file)) {
			assertThat(in).as(file).isNotNull();
			return clockCalls(new ClassReader(in));
		}
		catch (IOException ex) {
			throw new UncheckedIOException(ex);
		}
	}

	private static List<String> clockCalls(Class<?> type) throws IOException {
		return clockCalls(new ClassReader(type.getName()));
	}

	private static List<String> clockCalls(ClassReader reader) {
		List<String> calls = new ArrayList<>();
		reader.accept(new ClassVisitor(Opcodes.ASM9) {

			@Override
			public MethodVisitor visitMethod(int access, String name, String descriptor, String signature,
					String[] exceptions) {
				return new MethodVisitor(Opcodes.ASM9) {

					@Override
					public void visitMethodInsn(int opcode, String owner, String name, String descriptor,
							boolean isInterface) {
						record(owner, name, descriptor);
					}

					@Override
					public void visitInvokeDynamicInsn(String name, String descriptor, Handle bootstrap,
							Object... arguments) {
						for (Object argument : arguments) {
							if (argument instanceof Handle handle) {
								record(handle.getOwner(), handle.getName(), handle.getDesc());
							}
						}
					}

					private void record(String owner, String name, String descriptor) {
						if (readsClock(owner, name, descriptor)) {
							calls.add(owner + "." + name + (name.equals("<init>") ? descriptor : ""));
						}
					}

				};
			}

		}, ClassReader.SKIP_DEBUG);
		return calls;
	}

	/** Calls the scan must find, one of them through a method reference. */
	static final class ReadsClocks {

		Object[] read(java.time.Clock clock) {
			java.util.function.LongSupplier nanos = System::nanoTime;
			return new Object[] { nanos, System.currentTimeMillis(), java.time.Instant.now(),
					java.time.LocalDateTime.now(), clock.instant(), new java.util.Date() };
		}

	}

}
