package dev.holdfast.aop;

import java.lang.reflect.Method;

import org.aopalliance.aop.Advice;

import org.springframework.aop.support.StaticMethodMatcherPointcutAdvisor;

/**
 * Applies {@link LeaderOnlyInterceptor} to methods annotated with {@link dev.holdfast.LeaderOnly}.
 */
public class LeaderOnlyAdvisor extends StaticMethodMatcherPointcutAdvisor {

	private final transient LeaderOnlyOperations operations;

	public LeaderOnlyAdvisor(LeaderOnlyOperations operations, Advice advice, int order) {
		super(advice);
		this.operations = operations;
		setOrder(order);
	}

	@Override
	public boolean matches(Method method, Class<?> targetClass) {
		return this.operations.get(method, targetClass) != null;
	}

}
