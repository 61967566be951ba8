package dev.holdfast.autoconfigure;

import org.junit.jupiter.api.Test;

import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;

import dev.holdfast.aop.LockExpressionRoot;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The hints an ahead-of-time compiled application needs: every resource Holdfast loads from the
 * classpath, and the SpEL root object, registered by the registrar that the auto-configuration
 * imports.
 */
class HoldfastRuntimeHintsTests {

	private final RuntimeHints hints = new RuntimeHints();

	HoldfastRuntimeHintsTests() {
		new HoldfastRuntimeHints().registerHints(this.hints, getClass().getClassLoader());
	}

	@Test
	void schemaScriptsOfEveryDatabaseAreIncluded() {
		for (String platform : new String[] { "h2", "postgresql", "mysql", "mariadb" }) {
			String path = "dev/holdfast/jdbc/schema-" + platform + ".sql";
			assertThat(getClass().getClassLoader().getResource(path)).as(path).isNotNull();
			assertThat(RuntimeHintsPredicates.resource().forResource(path)).accepts(this.hints);
		}
	}

	@Test
	void luaScriptsAreIncluded() {
		String path = "dev/holdfast/lua/claim-tick.lua";
		assertThat(getClass().getClassLoader().getResource(path)).as(path).isNotNull();
		assertThat(RuntimeHintsPredicates.resource().forResource(path)).accepts(this.hints);
	}

	@Test
	void keyExpressionsCanCallTheRootObject() throws Exception {
		assertThat(RuntimeHintsPredicates.reflection()
			.onMethodInvocation(LockExpressionRoot.class.getMethod("getMethodName"))).accepts(this.hints);
		assertThat(RuntimeHintsPredicates.reflection().onMethodInvocation(LockExpressionRoot.class.getMethod("getArgs")))
			.accepts(this.hints);
	}

	@Test
	void postgresDriverFieldsOfTheListeningConnectionAreReachable() throws Exception {
		assertThat(RuntimeHintsPredicates.reflection()
			.onField(Class.forName("org.postgresql.core.QueryExecutorBase").getDeclaredField("pgStream")))
			.accepts(this.hints);
		assertThat(RuntimeHintsPredicates.reflection()
			.onField(Class.forName("org.postgresql.core.PGStream").getDeclaredField("nextStreamAvailableCheckTime")))
			.accepts(this.hints);
	}

	@Test
	void autoConfigurationImportsTheRegistrar() {
		assertThat(HoldfastAutoConfiguration.class
			.getAnnotation(org.springframework.context.annotation.ImportRuntimeHints.class)
			.value()).contains(HoldfastRuntimeHints.class);
	}

}
