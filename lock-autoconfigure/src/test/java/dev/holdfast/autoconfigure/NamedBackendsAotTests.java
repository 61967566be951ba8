package dev.holdfast.autoconfigure;

import java.util.Map;

import org.junit.jupiter.api.Test;

import org.springframework.aot.generate.ClassNameGenerator;
import org.springframework.aot.generate.DefaultGenerationContext;
import org.springframework.aot.generate.InMemoryGeneratedFiles;
import org.springframework.context.annotation.AnnotationConfigUtils;
import org.springframework.context.aot.ApplicationContextAotGenerator;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.core.env.MapPropertySource;
import org.springframework.javapoet.ClassName;

import dev.holdfast.LockConfigurationException;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatException;

/**
 * Ahead-of-time processing of an application with named backends fails naming Holdfast, decision
 * 0047 and the way out (NBK in docs/DESIGN.md); one without them is processed as before.
 */
class NamedBackendsAotTests {

	@Test
	void aotProcessingWithNamedBackendsFailsNamingTheDecisionAndTheWayOut() {
		assertThatException()
			.isThrownBy(() -> processAheadOfTime(Map.of("holdfast.backend", "memory", "holdfast.backends.jobs.type",
					"memory")))
			.withMessageContaining("Holdfast's named backends [jobs]")
			.withMessageContaining("0047-named-backends")
			.withMessageContaining("Remove holdfast.backends.*")
			.withRootCauseInstanceOf(LockConfigurationException.class);
	}

	@Test
	void aotProcessingWithoutNamedBackendsWorksAsBefore() {
		assertThatCode(() -> processAheadOfTime(Map.of("holdfast.backend", "memory"))).doesNotThrowAnyException();
	}

	private static void processAheadOfTime(Map<String, Object> properties) {
		try (GenericApplicationContext context = new GenericApplicationContext()) {
			context.getEnvironment().getPropertySources().addFirst(new MapPropertySource("test", properties));
			AnnotationConfigUtils.registerAnnotationConfigProcessors(context);
			context.registerBean(HoldfastAutoConfiguration.class.getName(), HoldfastAutoConfiguration.class);
			new ApplicationContextAotGenerator().processAheadOfTime(context, new DefaultGenerationContext(
					new ClassNameGenerator(ClassName.get("com.example", "App")), new InMemoryGeneratedFiles()));
		}
	}

}
