package dev.holdfast.autoconfigure;

import java.util.Set;
import java.util.TreeSet;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.InjectionPoint;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.beans.factory.UnsatisfiedDependencyException;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.MergedAnnotation;
import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.core.env.Environment;

import dev.holdfast.AsyncLockTemplate;
import dev.holdfast.LeaderElections;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockTemplate;
import dev.holdfast.core.LockEngine;
import dev.holdfast.scan.BackendChoice;

/**
 * Reports an injection point {@code @Qualifier("<name>")} of a {@link LockTemplate},
 * {@link LockEngine}, {@link AsyncLockTemplate} or {@link LeaderElections} whose name is no
 * configured backend (NBK-3 in docs/DESIGN.md) as an annotation's unknown {@code backend} is
 * reported, naming the backends there are, before Boot's "consider defining a bean".
 */
class NamedBackendFailureAnalyzer extends AbstractFailureAnalyzer<NoSuchBeanDefinitionException>
		implements Ordered {

	private static final Set<Class<?>> CHOSEN = Set.of(LockTemplate.class, LockEngine.class, AsyncLockTemplate.class,
			LeaderElections.class);

	private final Environment environment;

	NamedBackendFailureAnalyzer(Environment environment) {
		this.environment = environment;
	}

	@Override
	protected @Nullable FailureAnalysis analyze(Throwable rootFailure, NoSuchBeanDefinitionException cause) {
		UnsatisfiedDependencyException unsatisfied = findCause(rootFailure, UnsatisfiedDependencyException.class);
		InjectionPoint injectionPoint = (unsatisfied != null) ? unsatisfied.getInjectionPoint() : null;
		Class<?> type = cause.getBeanType();
		if (injectionPoint == null || type == null || CHOSEN.stream().noneMatch((chosen) -> chosen.isAssignableFrom(type))) {
			return null;
		}
		MergedAnnotation<Qualifier> qualifier = MergedAnnotations.from(injectionPoint.getAnnotations())
			.get(Qualifier.class);
		if (!qualifier.isPresent()) {
			return null;
		}
		try {
			new BackendChoice<>(NamedBackend.configured(this.environment).keySet(), (name) -> name)
				.check(qualifier.getString("value"), "@Qualifier on " + injectionPoint + " of a " + type.getSimpleName());
			return null;
		}
		catch (LockConfigurationException ex) {
			return new FailureAnalysis(ex.getMessage(), "Qualify it with one of "
					+ new TreeSet<>(NamedBackend.configured(this.environment).keySet()) + " (no qualifier: the default backend), or "
					+ "configure holdfast.backends." + qualifier.getString("value") + ".type.", cause);
		}
	}

	@Override
	public int getOrder() {
		return Ordered.HIGHEST_PRECEDENCE;
	}

}
