package dev.holdfast.autoconfigure;

import java.util.Set;

import org.jspecify.annotations.Nullable;

import org.springframework.aot.AotDetector;
import org.springframework.beans.factory.aot.BeanFactoryInitializationAotContribution;
import org.springframework.beans.factory.aot.BeanFactoryInitializationAotProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.core.env.Environment;

import dev.holdfast.LockConfigurationException;

/**
 * Fails the ahead-of-time processing of an application with named backends, whose beans are
 * registered with instance suppliers that AOT cannot generate (decision 0047), with a message
 * that names Holdfast and the way out instead of Spring's generic one. Loaded from
 * {@code META-INF/spring/aot.factories}: only the AOT processing runs it.
 */
class NamedBackendsAotCheck implements BeanFactoryInitializationAotProcessor {

	@Override
	public @Nullable BeanFactoryInitializationAotContribution processAheadOfTime(
			ConfigurableListableBeanFactory beanFactory) {
		if (beanFactory.containsBean(HoldfastAutoConfiguration.class.getName())) {
			check(NamedBackendsRegistrar.names(beanFactory.getBean(Environment.class), beanFactory));
		}
		return null;
	}

	/**
	 * Fails if {@code names} is not empty and the application is AOT-processed, or runs on what
	 * that generated.
	 */
	static void check(Set<String> names) {
		if (!names.isEmpty()) {
			String wayOut = "Remove holdfast.backends.* from the AOT-processed application (set them only where it"
					+ " runs without spring.aot.enabled), or run it without AOT processing.";
			// The way out in the message too: the AOT build shows the message only.
			throw new LockConfigurationException("Holdfast's named backends " + names + " (holdfast.backends.*) cannot"
					+ " be processed ahead of time" + (AotDetector.useGeneratedArtifacts() ? ", and this application"
							+ " runs on AOT-generated code" : "") + ": their beans are built at startup (decision"
							+ " 0047-named-backends). " + wayOut, wayOut);
		}
	}

}
