package dev.holdfast.aop;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.stream.BaseStream;

import io.micrometer.observation.Observation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.ReactiveAdapter;
import org.springframework.core.ReactiveAdapterRegistry;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.util.ClassUtils;
import org.springframework.util.ObjectUtils;

import dev.holdfast.AsyncLockTemplate;
import dev.holdfast.Lease;
import dev.holdfast.LockTemplate;
import dev.holdfast.OnLocked;
import dev.holdfast.core.EngineLease;
import dev.holdfast.core.IdentityStrings;
import dev.holdfast.core.ThreadBindings;
import dev.holdfast.multi.KeySetLocking;
import dev.holdfast.scan.BackendChoice;

/**
 * Runs a method under its {@link LockOperation}: evaluates the key, acquires through the
 * {@link LockTemplate}, binds a view of the lease to the thread (closing it, as try-with-resources
 * on {@code LockContext.requireLease()} does, never releases the lock under the running method),
 * and releases when the method's work is done:
 * <ul>
 * <li>a plain method: when it returns or throws;</li>
 * <li>a method returning a {@link CompletionStage} (declared so, or returned at run time by a method
 * declaring {@code Object}): acquired before the call, released when the returned stage
 * completes, fails or is cancelled (at once if the method throws). The caller gets a stage that
 * completes with the method's value or exception, after the release;</li>
 * <li>a method returning {@code Mono}, {@code Flux} or another reactive type (with Reactor on the
 * classpath): the method is called at once, as Spring's reactive transactions do, and its
 * publisher acquires on each subscription and releases on complete, error or cancel.</li>
 * </ul>
 * Return types that carry work past the return without a completion to wait for ({@link Future}s
 * that are not stages, streams) are refused at startup by the {@link LockOperationSource}; when a
 * method declaring {@code Object} returns one at run time, a WARN names the method, once.
 * Leases that outlive the call are detached from the calling thread when the method returns, so
 * later calls on that thread do not reenter them. While a plain or future-returning method runs,
 * the observation of the lease's hold is the thread's current observation, so that what the
 * method observes (JDBC, HTTP) is its child; the scope is closed before the method's thread
 * returns, never left open for another thread. Free of AOP types, so that any invoker can use it.
 */
public class LockAspectSupport {

	private static final Log logger = LogFactory.getLog(LockAspectSupport.class);

	/**
	 * Per class of a result: the fix when its work runs or is read after the method returned (a
	 * stream, a {@code Future}, anything with a reactive adapter), or empty. Every call with a
	 * result asks, so the answer is one class lookup, not a search of the adapters.
	 */
	private static final ClassValue<String> OUTLIVING_WORK_FIX = new ClassValue<>() {

		@Override
		protected String computeValue(Class<?> type) {
			if (BaseStream.class.isAssignableFrom(type)) {
				return "return a List, or consume the stream inside the method";
			}
			if (Future.class.isAssignableFrom(type)
					|| ReactiveAdapterRegistry.getSharedInstance().getAdapter(type) != null) {
				return "declare the return type CompletableFuture/CompletionStage, or a Mono/Flux, and the lock is held "
						+ "until it completes";
			}
			return "";
		}

	};

	/** Whether Reactor is on the class path: reactive results are locked through it. */
	static final boolean REACTOR_PRESENT = ClassUtils.isPresent("reactor.core.publisher.Flux",
			LockAspectSupport.class.getClassLoader());

	private final LockOperationSource operations;

	private final BackendChoice<LockTemplate> templates;

	private final @Nullable BeanFactory beanFactory;

	private final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();


	private final @Nullable BackendChoice<ReactiveLockSupport> reactive;

	/** The methods warned about by {@link #warnIfWorkOutlivesTheLock}: at most one per annotated method. */
	private final Set<Method> warned = ConcurrentHashMap.newKeySet();

	public LockAspectSupport(LockOperationSource operations, LockTemplate template, @Nullable BeanFactory beanFactory) {
		this(operations, BackendChoice.only(template), beanFactory);
	}

	/**
	 * @param templates the template of each backend an operation can name
	 */
	public LockAspectSupport(LockOperationSource operations, BackendChoice<LockTemplate> templates,
			@Nullable BeanFactory beanFactory) {
		this.operations = operations;
		this.templates = templates;
		this.beanFactory = beanFactory;
		this.reactive = REACTOR_PRESENT ? templates.map(ReactiveLockSupport::new) : null;
	}

	/** The method's invocation, as the caller can continue it. */
	@FunctionalInterface
	public interface Invoker {

		@Nullable Object proceed() throws Throwable;

	}

	/**
	 * Calls {@code invoker} while holding the method's lock, or directly if the method is not
	 * annotated; for a proxy without a target, {@code target} is {@code null} and the method is
	 * looked up on {@code targetClass} (or where it is declared, if that is {@code null}).
	 */
	public @Nullable Object execute(Invoker invoker, @Nullable Object target, @Nullable Class<?> targetClass,
			Method method, Object[] args) throws Throwable {
		LockOperation operation = this.operations.getOperation(method, targetClass);
		if (operation == null) {
			return invoker.proceed();
		}
		Object key = operation.keysExpressions().isEmpty() ? evaluateKey(operation, target, targetClass, method, args)
				: evaluateKeys(operation, evaluationContext(operation, target, targetClass, args));
		Class<?> returnType = operation.method().getReturnType();
		ReactiveAdapter adapter = operation.reactiveAdapter();
		if (this.reactive != null && adapter != null && !CompletionStage.class.isAssignableFrom(returnType)) {
			Object result = invoker.proceed();
			return (result != null)
					? this.reactive.get(operation.backend()).lock(result, adapter, operation.suspending(), operation.name(), key,
							operation.options(), operation.onLocked())
					: null;
		}
		LockTemplate template = this.templates.get(operation.backend());
		Lease lease = acquire(template, operation, key);
		if (lease == null) {
			return emptyResult(returnType);
		}
		// The method sees a view: closing it (try-with-resources) releases nothing under the method.
		Object result;
		try (ThreadBindings.Binding scope = ThreadBindings.bind(KeySetLocking.viewOf(lease));
				Observation.Scope observed = EngineLease.observationOf(lease).openScope()) {
			result = invoker.proceed();
		}
		catch (Throwable ex) {
			lease.close();
			throw ex;
		}
		// Whatever the declared type (Object, a type variable), a stage keeps the lock until it is done.
		if (result instanceof CompletionStage<?> stage) {
			KeySetLocking.detach(lease);
			return releaseWhenDone(template, stage, lease, returnType);
		}
		lease.close();
		if (result != null && !Future.class.isAssignableFrom(returnType)) {
			// A declared Future passed the startup check only on an @Async method, whose body this is.
			warnIfWorkOutlivesTheLock(operation, result);
		}
		return result;
	}

	/**
	 * Logs a WARN, once per method, when a method whose declared type could not be refused at
	 * startup ({@code Object}, a type variable) returned work that runs or is read after the lock
	 * was released: a {@link Future} that is not a stage, a stream, or a publisher.
	 */
	private void warnIfWorkOutlivesTheLock(LockOperation operation, Object result) {
		String fix = OUTLIVING_WORK_FIX.get(result.getClass());
		if (fix.isEmpty()) {
			return;
		}
		if (this.warned.add(operation.method()) && logger.isWarnEnabled()) {
			logger.warn(operation.annotation() + " on " + operation.describe() + " returned a "
					+ result.getClass().getName()
					+ ", whose work runs or is read after the method returned and the lock was released, unlocked: "
					+ fix + " (logged once per method)");
		}
	}

	/**
	 * A stage that completes like {@code stage}, after {@code lease} is released; cancelling it cancels {@code stage}, which releases. Where the declared type is a
	 * subtype of {@link CompletableFuture} that cannot be replaced, or a method declaring
	 * {@code Object} returned a stage of another class (a caller may cast to it), {@code stage}
	 * itself is returned and the release happens when it completes.
	 */
	private Object releaseWhenDone(LockTemplate template, CompletionStage<?> stage, Lease lease, Class<?> returnType) {
		boolean replaceable = returnType.isAssignableFrom(CompletableFuture.class)
				&& (CompletionStage.class.isAssignableFrom(returnType) || stage.getClass() == CompletableFuture.class);
		if (!replaceable) {
			stage.whenComplete((value, ex) -> release(template, lease));
			return stage;
		}
		CompletableFuture<@Nullable Object> result = new CompletableFuture<>();
		stage.whenComplete((value, ex) -> release(template, lease).whenComplete((released, never) -> {
			if (ex != null) {
				result.completeExceptionally(ex);
			}
			else {
				result.complete(value);
			}
		}));
		result.whenComplete((value, ex) -> {
			if (result.isCancelled() && stage instanceof Future<?> future) {
				future.cancel(true);
			}
		});
		return result;
	}

	private static CompletionStage<Void> release(LockTemplate template, Lease lease) {
		if (template instanceof AsyncLockTemplate async) {
			return async.releaseAsync(lease);
		}
		lease.close();
		return CompletableFuture.completedFuture(null);
	}

	private static @Nullable Lease acquire(LockTemplate template, LockOperation operation, @Nullable Object key) {
		Lease lease;
		if (operation.permits() > 0) {
			lease = (operation.onLocked() == OnLocked.THROW)
					? template.acquirePermit(operation.name(), key, operation.permits(), operation.options())
					: template.tryAcquirePermit(operation.name(), key, operation.permits(), operation.options())
						.orElse(null);
		}
		else if (key instanceof KeySet keys) {
			lease = (operation.onLocked() == OnLocked.THROW)
					? template.acquireAll(operation.name(), keys.keys(), operation.options())
					: template.tryAcquireAll(operation.name(), keys.keys(), operation.options()).orElse(null);
		}
		else if (operation.onLocked() == OnLocked.THROW) {
			lease = template.acquire(operation.name(), key, operation.options());
		}
		else {
			lease = template.tryAcquire(operation.name(), key, operation.options()).orElse(null);
		}
		return lease;
	}

	private @Nullable Object evaluateKey(LockOperation operation, @Nullable Object target,
			@Nullable Class<?> targetClass, Method method, Object[] args) {
		Expression expression = operation.keyExpression();
		if (expression == null) {
			return null;
		}
		Object key = value(operation, expression, operation.keyExpressionText(),
				evaluationContext(operation, target, targetClass, args));
		return checked(operation, operation.keyExpressionText(), key);
	}

	private MethodBasedEvaluationContext evaluationContext(LockOperation operation, @Nullable Object target,
			@Nullable Class<?> targetClass, Object[] args) {
		LockExpressionRoot root = new LockExpressionRoot(operation.method(), args, target, targetClass);
		MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(root, operation.method(), args,
				this.parameterNames);
		if (this.beanFactory != null) {
			context.setBeanResolver(new BeanFactoryResolver(this.beanFactory));
		}
		return context;
	}

	/** The value of a key expression, {@code Optional} unwrapped, never {@code null}. */
	private static Object value(LockOperation operation, Expression expression, String text,
			MethodBasedEvaluationContext context) {
		Object key;
		try {
			key = expression.getValue(context);
		}
		catch (EvaluationException ex) {
			throw new IllegalArgumentException("Key expression \"" + text + "\" of " + operation.annotation() + " on "
					+ operation.describe() + " failed: " + ex.getMessage(), ex);
		}
		if (key == null || (key instanceof Optional<?> optional && optional.isEmpty())) {
			throw new IllegalArgumentException("Key expression \"" + text + "\" of " + operation.annotation() + " on "
					+ operation.describe()
					+ " evaluated to null; a lock key must not be null (check the arguments, or use a name alone)");
		}
		return (key instanceof Optional<?> optional) ? optional.get() : key;
	}

	/** {@code value}, unless it renders as an identity string. */
	private static Object checked(LockOperation operation, String text, Object value) {
		Object identity = IdentityStrings.findIdentityValue(value);
		if (identity != null) {
			throw new IllegalArgumentException(identityKeyMessage(operation, text, value, identity));
		}
		return value;
	}

	/** The keys of the {@code keys} expressions: each one value, or each element of a collection or array. */
	private static KeySet evaluateKeys(LockOperation operation, MethodBasedEvaluationContext context) {
		List<Object> keys = new ArrayList<>();
		for (LockOperation.KeysExpression expression : operation.keysExpressions()) {
			Object value = value(operation, expression.expression(), expression.text(), context);
			Collection<?> elements = (value instanceof Collection<?> collection) ? collection
					: value.getClass().isArray() ? Arrays.asList(ObjectUtils.toObjectArray(value)) : null;
			if (elements == null) {
				keys.add(checked(operation, expression.text(), value));
				continue;
			}
			for (Object element : elements) {
				if (element == null) {
					throw new IllegalArgumentException("Key expression \"" + expression.text()
							+ "\" of " + operation.annotation() + " on " + operation.describe() + " gave a "
							+ value.getClass().getName()
							+ " holding null; a lock key must not be null (check the arguments)");
				}
				keys.add(checked(operation, expression.text(), element));
			}
		}
		if (keys.isEmpty()) {
			throw new IllegalArgumentException("The keys expressions " + operation.keysExpressions().stream()
				.map((expression) -> "\"" + expression.text() + "\"").toList() + " of " + operation.annotation() + " on "
					+ operation.describe() + " gave no key (empty collections or arrays); at least one key is needed "
					+ "(check the arguments, or skip the call when there is nothing to lock)");
		}
		return new KeySet(keys);
	}

	/** The keys of a call with {@code keys}: several locks, not one key rendered from a collection. */
	private record KeySet(List<Object> keys) {
	}

	private static String identityKeyMessage(LockOperation operation, String text, Object value, Object identity) {
		String example = text.matches("#[A-Za-z_$][\\w$]*") ? text + ".id" : "#order.id";
		return "Key expression \"" + text + "\" of " + operation.annotation() + " on " + operation.describe()
				+ " gave a "
				+ ((value != identity) ? value.getClass().getName() + " holding a " : "")
				+ identity.getClass().getName() + ", whose toString() is Object's identity string (class name and "
				+ "hash code): the key would differ per call and per JVM, and the lock would exclude nothing. "
				+ "Key on a value that identifies it, such as key = \"" + example
				+ "\"" + (identity.getClass().isSynthetic() ? ""
						: ", or override toString() in " + identity.getClass().getSimpleName());
	}

	/** The value a skipped method returns: empty, not absent, wherever the type allows it. */
	static @Nullable Object emptyResult(Class<?> returnType) {
		if (returnType == Optional.class) {
			return Optional.empty();
		}
		if (CompletionStage.class.isAssignableFrom(returnType) && returnType.isAssignableFrom(CompletableFuture.class)) {
			return CompletableFuture.completedFuture(null);
		}
		ReactiveAdapter adapter = ReactiveAdapterRegistry.getSharedInstance().getAdapter(returnType);
		if (adapter != null && adapter.supportsEmpty()) {
			return adapter.getDescriptor().getEmptyValue();
		}
		return null;
	}

}
