package dev.holdfast.autoconfigure;

import java.util.function.UnaryOperator;

import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ReflectionUtils;

import dev.holdfast.LeaderElections;
import dev.holdfast.scan.AnnotatedMethodTypes;
import dev.holdfast.scan.BackendChoice;
import dev.holdfast.LeaderOnly;
import dev.holdfast.aop.LeaderOnlyOperations;

/**
 * Finds the groups that {@link LeaderOnly} methods name, as their beans are created (a group
 * name that cannot work fails the context there, naming the method), and the
 * {@link LeaderRoleBeans role beans}; joins them once every singleton exists; they campaign when
 * the application is ready.
 */
final class LeaderOnlyGroups implements BeanPostProcessor, SmartInitializingSingleton {

	private final ObjectProvider<LeaderOnlyOperations> operations;

	private final BackendChoice<@Nullable LeaderElections> elections;

	private final UnaryOperator<String> placeholders;

	private final LeaderRoleBeans roles = new LeaderRoleBeans();

	/** Which types can have {@link LeaderOnly} methods, judged once per type of their hierarchies (BSL-10). */
	private final AnnotatedMethodTypes leaderOnlyTypes = new AnnotatedMethodTypes(LeaderOnly.class);

	/**
	 * @param elections the leader elections of each backend; the default backend's may be missing
	 */
	LeaderOnlyGroups(ObjectProvider<LeaderOnlyOperations> operations,
			BackendChoice<@Nullable LeaderElections> elections, UnaryOperator<String> placeholders) {
		this.operations = operations;
		this.elections = elections;
		this.placeholders = placeholders;
	}

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		Class<?> targetClass = AopUtils.getTargetClass(bean);
		if (!AnnotationUtils.isCandidateClass(targetClass, LeaderOnly.class)) {
			return bean;
		}
		if (this.leaderOnlyTypes.hasAnnotatedMethods(targetClass)) {
			ReflectionUtils.doWithMethods(targetClass,
					(method) -> this.operations.getObject().get(method, targetClass),
					(method) -> AnnotatedElementUtils.hasAnnotation(method, LeaderOnly.class));
		}
		return this.roles.register(bean, beanName, this.placeholders, this.elections);
	}

	@Override
	public void afterSingletonsInstantiated() {
		this.operations.getObject().groups().forEach((backend, groups) -> {
			LeaderElections leaderElections = this.elections.get(backend);
			if (leaderElections != null) {
				groups.forEach(leaderElections::join);
			}
		});
		this.roles.join(this.elections);
	}

}
