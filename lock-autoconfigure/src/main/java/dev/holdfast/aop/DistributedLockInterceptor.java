package dev.holdfast.aop;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.ProxyMethodInvocation;
import org.springframework.aop.framework.Advised;

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
		// A proxy without a target (its target source returned null, or an interface proxy whose
		// advice implements the method) is locked all the same, judged by its target class.
		Class<?> targetClass = (target != null) ? target.getClass() : targetClassOf(invocation);
		// the operation source resolves the most specific method once per (method, target class)
		return this.support.execute(invocation::proceed, target, targetClass, invocation.getMethod(),
				invocation.getArguments());
	}

	private static @Nullable Class<?> targetClassOf(MethodInvocation invocation) {
		if (invocation instanceof ProxyMethodInvocation proxied && proxied.getProxy() instanceof Advised advised) {
			return advised.getTargetClass();
		}
		return null;
	}

}
