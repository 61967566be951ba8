package dev.holdfast.aop;

import java.lang.reflect.Method;

import org.aopalliance.aop.Advice;

import org.springframework.aop.ClassFilter;
import org.springframework.aop.Pointcut;
import org.springframework.aop.support.AbstractPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcherPointcut;

/**
 * Applies {@link DistributedLockInterceptor} to methods annotated with
 * {@link dev.holdfast.DistributedLock}. Its order decides where the lock sits among other
 * advice; the default puts it outside {@code @Transactional}, so that the lock is taken before the
 * transaction begins and released after it ends.
 */
public class DistributedLockAdvisor extends AbstractPointcutAdvisor {

	private final transient LockOperationSource operations;

	private final transient Advice advice;

	private final transient Pointcut pointcut = new StaticMethodMatcherPointcut() {

		/** Passes over a class without annotated methods at once, instead of method by method. */
		@Override
		public ClassFilter getClassFilter() {
			return (type) -> DistributedLockAdvisor.this.operations.isCandidateClass(type);
		}

		@Override
		public boolean matches(Method method, Class<?> targetClass) {
			return DistributedLockAdvisor.this.operations.getOperation(method, targetClass) != null;
		}

	};

	public DistributedLockAdvisor(LockOperationSource operations, Advice advice, int order) {
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
