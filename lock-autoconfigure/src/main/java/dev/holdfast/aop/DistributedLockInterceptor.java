package dev.holdfast.aop;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;

/**
 * Runs {@link dev.holdfast.DistributedLock} methods under their lock; a thin adapter over
 * {@link LockAspectSupport}.
 */
public class DistributedLockInterceptor implements MethodInterceptor {

	private final LockAspectSupport support;

	public DistributedLockInterceptor(LockAspectSupport support) {
		this.support = support;
	}

	@Override
	public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
		Object target = invocation.getThis();
		if (target == null) {
			return invocation.proceed();
		}
		// the operation source resolves the most specific method once per (method, target class)
		return this.support.execute(invocation::proceed, target, invocation.getMethod(), invocation.getArguments());
	}

}
