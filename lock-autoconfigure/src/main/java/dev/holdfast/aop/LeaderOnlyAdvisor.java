package dev.holdfast.aop;

import java.lang.reflect.Method;

import org.aopalliance.aop.Advice;

import org.springframework.aop.support.StaticMethodMatcherPointcutAdvisor;

/**
 * Applies {@link LeaderOnlyInterceptor} to methods annotated with {@link dev.holdfast.LeaderOnly};
 * a class without such methods is passed over at once, instead of method by method.
 */
public class LeaderOnlyAdvisor extends StaticMethodMatcherPointcutAdvisor {

	private final transient LeaderOnlyOperations operations;

	public LeaderOnlyAdvisor(LeaderOnlyOperations operations, Advice advice, int order) {
		super(advice);
		this.operations = operations;
		setClassFilter(operations::isCandidateClass);
		setOrder(order);
	}

	@Override
	public boolean matches(Method method, Class<?> targetClass) {
		return this.operations.get(method, targetClass) != null;
	}

}
