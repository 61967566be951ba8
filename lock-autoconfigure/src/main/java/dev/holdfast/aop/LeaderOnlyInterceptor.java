package dev.holdfast.aop;

import java.util.Optional;

import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.AopUtils;

import dev.holdfast.LeaderElections;
import dev.holdfast.LeaderOnly;
import dev.holdfast.LeaderTerm;
import dev.holdfast.NotLeaderException;
import dev.holdfast.leader.TermBindings;
import dev.holdfast.scan.BackendChoice;

/**
 * Runs a {@link LeaderOnly} method only while this instance leads its group, with the term bound
 * to the thread for {@link dev.holdfast.LeaderContext}; otherwise skips it or throws.
 */
public final class LeaderOnlyInterceptor implements MethodInterceptor {

	private final LeaderOnlyOperations operations;

	private final BackendChoice<LeaderElections> elections;

	/** @param elections the leader elections of each backend a group can name */
	public LeaderOnlyInterceptor(LeaderOnlyOperations operations, BackendChoice<LeaderElections> elections) {
		this.operations = operations;
		this.elections = elections;
	}

	@Override
	public @Nullable Object invoke(MethodInvocation invocation) throws Throwable {
		Object target = invocation.getThis();
		Class<?> targetClass = (target != null) ? AopUtils.getTargetClass(target) : null;
		LeaderOnlyOperations.Operation operation = this.operations.get(invocation.getMethod(), targetClass);
		if (operation == null) {
			return invocation.proceed();
		}
		Optional<LeaderTerm> term = this.elections.get(operation.backend()).join(operation.group()).term();
		if (term.isEmpty()) {
			if (operation.onNotLeader() == LeaderOnly.OnNotLeader.THROW) {
				throw new NotLeaderException(operation.group());
			}
			return LockAspectSupport.emptyResult(invocation.getMethod().getReturnType());
		}
		try (TermBindings.Binding binding = TermBindings.bind(term.get())) {
			return invocation.proceed();
		}
	}

}
