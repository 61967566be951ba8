package dev.holdfast.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The JDBC backend takes no time from the JVM, so a client whose clock is minutes off cannot
 * change who holds a lock: every expiry is computed and compared by the database. This test
 * fails if any class of the backend starts to read a JVM clock.
 */
class JdbcLockBackendClockTests {

	private static final List<String> JVM_CLOCKS = List.of("currentTimeMillis", "nanoTime", "java/time/Clock",
			"java/time/Instant", "java/time/LocalDateTime", "java/time/ZonedDateTime", "java/util/Date");

	@Test
	void backendClassesReadNoJvmClock() throws IOException {
		for (Class<?> type : List.of(JdbcLockBackend.class, JdbcLockDialect.class, JdbcLockDialect.SqlClock.class,
				JdbcLockDialect.PostgreSql.class, JdbcLockDialect.MySql.class, JdbcLockDialect.H2.class,
				JdbcLockDialect.Generic.class)) {
			String constants = constantPool(type);
			assertThat(constants).as("class file constants of %s", type.getName()).doesNotContain(JVM_CLOCKS);
		}
	}

	private static String constantPool(Class<?> type) throws IOException {
		String resource = type.getName().replace('.', '/') + ".class";
		try (InputStream in = type.getClassLoader().getResourceAsStream(resource)) {
			assertThat(in).as(resource).isNotNull();
			return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
		}
	}

}
