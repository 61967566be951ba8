package dev.holdfast.aop;

import java.lang.reflect.Method;

import org.aopalliance.aop.Advice;

import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;

/**
 * Applies {@link LeaderOnlyInterceptor} to methods annotated with {@link dev.holdfast.LeaderOnly}.
 */
public class LeaderOnlyAdvisor extends AbstractPointcutAdvisor {

	private final transient LeaderOnlyOperations operations;

	private final transient Advice advice;

	private final transient Pointcut pointcut = new StaticMethodMatcherPointcut() {

		@Override
		public boolean matches(Method method, Class<?> targetClass) {
			return LeaderOnlyAdvisor.this.operations.get(method, targetClass) != null;
		}

	};

	public LeaderOnlyAdvisor(LeaderOnlyOperations operations, Advice advice, int order) {
		this.operations = operations;
		this.advice = advice;
		setOrder(order);
	}

	@Override
	public Pointcut getPointcut() {
		return this.pointcut;
	}

	@Override
	public Advice getAdvice() {
		return this.advice;
	}

}
