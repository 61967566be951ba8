package dev.holdfast.aop;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;

import static org.assertj.core.api.Assertions.assertThat;

/** Asserts that a bean's annotated methods fail the context at startup, naming the bean, the problem and the fix. */
public final class AnnotationStartupFailures {

	private AnnotationStartupFailures() {
	}

	/**
	 * Starts a context with Holdfast on the memory backend and {@code bean}, and asserts that it
	 * failed with a {@link LockConfigurationException} naming the bean's class and {@code problem},
	 * whose action contains {@code fix}.
	 */
	public static void assertStartupFailure(Class<?> bean, String problem, String fix) {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
			.withPropertyValues("holdfast.backend=memory")
			.withBean(bean)
			.run((context) -> {
				assertThat(context).hasFailed();
				Throwable cause = context.getStartupFailure();
				while (cause != null && !(cause instanceof LockConfigurationException)) {
					cause = cause.getCause();
				}
				assertThat(cause).isInstanceOf(LockConfigurationException.class)
					.hasMessageContaining(bean.getName())
					.hasMessageContaining(problem);
				assertThat(((LockConfigurationException) cause).getAction()).contains(fix);
			});
	}

}
