package dev.holdfast.aop;

import java.lang.reflect.Method;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.ReactiveAdapter;
import org.springframework.core.ReactiveAdapterRegistry;
import org.springframework.expression.EvaluationException;

import dev.holdfast.Lease;
import dev.holdfast.LockContext;
import dev.holdfast.LockTemplate;
import dev.holdfast.OnLocked;

/**
 * Runs a method under its {@link LockOperation}: evaluates the key, acquires through the
 * {@link LockTemplate}, binds the lease to the thread, and releases when the method returns.
 * Free of AOP types, so that any invoker can use it.
 */
public class LockAspectSupport {

	private final LockOperationSource operations;

	private final LockTemplate template;

	private final @Nullable BeanFactory beanFactory;

	private final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();

	private final ReactiveAdapterRegistry reactiveAdapters = ReactiveAdapterRegistry.getSharedInstance();

	public LockAspectSupport(LockOperationSource operations, LockTemplate template, @Nullable BeanFactory beanFactory) {
		this.operations = operations;
		this.template = template;
		this.beanFactory = beanFactory;
	}

	/** The method's invocation, as the caller can continue it. */
	@FunctionalInterface
	public interface Invoker {

		@Nullable Object proceed() throws Throwable;

	}

	/**
	 * Calls {@code invoker} while holding the method's lock, or directly if the method is not
	 * annotated.
	 */
	public @Nullable Object execute(Invoker invoker, Object target, Method method, Object[] args) throws Throwable {
		Class<?> targetClass = target.getClass();
		LockOperation operation = this.operations.getOperation(method, targetClass);
		if (operation == null) {
			return invoker.proceed();
		}
		Object key = evaluateKey(operation, target, targetClass, method, args);
		Lease lease;
		if (operation.onLocked() == OnLocked.THROW) {
			lease = this.template.acquire(operation.name(), key, operation.options());
		}
		else {
			lease = this.template.tryAcquire(operation.name(), key, operation.options()).orElse(null);
			if (lease == null) {
				return emptyResult(operation.method().getReturnType());
			}
		}
		try (Lease held = lease; LockContext.Scope scope = LockContext.bind(lease)) {
			return invoker.proceed();
		}
	}

	private @Nullable Object evaluateKey(LockOperation operation, Object target, Class<?> targetClass, Method method,
			Object[] args) {
		if (operation.keyExpression() == null) {
			return null;
		}
		LockExpressionRoot root = new LockExpressionRoot(operation.method(), args, target, targetClass);
		MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(root, operation.method(), args,
				this.parameterNames);
		if (this.beanFactory != null) {
			context.setBeanResolver(new BeanFactoryResolver(this.beanFactory));
		}
		Object key;
		try {
			key = operation.keyExpression().getValue(context);
		}
		catch (EvaluationException ex) {
			throw new IllegalArgumentException("Key expression \"" + operation.keyExpressionText() + "\" of @DistributedLock on "
					+ operation.describe() + " failed: " + ex.getMessage(), ex);
		}
		if (key == null || (key instanceof Optional<?> optional && optional.isEmpty())) {
			throw new IllegalArgumentException("Key expression \"" + operation.keyExpressionText()
					+ "\" of @DistributedLock on " + operation.describe()
					+ " evaluated to null; a lock key must not be null (check the arguments, or use a name alone)");
		}
		return (key instanceof Optional<?> optional) ? optional.get() : key;
	}

	/** The value a skipped method returns: empty, not absent, wherever the type allows it. */
	@Nullable Object emptyResult(Class<?> returnType) {
		if (returnType == Optional.class) {
			return Optional.empty();
		}
		if (CompletionStage.class.isAssignableFrom(returnType) && returnType.isAssignableFrom(CompletableFuture.class)) {
			return CompletableFuture.completedFuture(null);
		}
		ReactiveAdapter adapter = this.reactiveAdapters.getAdapter(returnType);
		if (adapter != null && adapter.supportsEmpty()) {
			return adapter.getDescriptor().getEmptyValue();
		}
		return null;
	}

}
