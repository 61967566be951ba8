package dev.holdfast.aop;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.stream.BaseStream;

import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.AopUtils;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.BridgeMethodResolver;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.KotlinDetector;
import org.springframework.core.MethodParameter;
import org.springframework.core.MethodClassKey;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.core.ReactiveAdapter;
import org.springframework.core.ReactiveAdapterRegistry;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.SpelNode;
import org.springframework.expression.spel.ast.VariableReference;
import org.springframework.expression.spel.standard.SpelExpression;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.scheduling.annotation.Async;
import org.springframework.util.ClassUtils;
import org.springframework.util.StringUtils;
import org.springframework.util.StringValueResolver;

import dev.holdfast.DistributedLock;
import dev.holdfast.DistributedSemaphore;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.OnLocked;
import dev.holdfast.core.IdentityStrings;
import dev.holdfast.core.IdentityStrings.DeclaredIdentity;
import dev.holdfast.scan.AnnotatedMethodTypes;
import dev.holdfast.scan.BackendChoice;

/**
 * Finds and resolves {@link DistributedLock} on methods, once per (method, target class).
 * Placeholders are resolved in the name and the durations, never in the key expression (a
 * property's value would become code there); expressions are parsed here and never again. Every problem is a {@link LockConfigurationException} naming the method.
 * The cache holds one entry per method of the classes that can have {@link DistributedLock}
 * methods ({@link #isCandidateClass}), a bounded number.
 */
public class LockOperationSource {

	private static final Object NONE = new Object();

	private final Map<MethodClassKey, Object> cache = new ConcurrentHashMap<>(256);

	private final AnnotatedMethodTypes lockTypes = new AnnotatedMethodTypes(DistributedLock.class,
			DistributedSemaphore.class);

	/** Per semaphore name, its permits and where they were given: one entry per annotated method at most. */
	private final Map<String, LockAnnotation> semaphores = new ConcurrentHashMap<>();

	private final SpelExpressionParser parser = new SpelExpressionParser();

	private final ParameterNameDiscoverer parameterNames = new DefaultParameterNameDiscoverer();

	private static final String COROUTINES_FLOW = "kotlinx.coroutines.flow.Flow";

	/** Kotlin results whose work runs later, which Spring adapts with kotlinx-coroutines-reactor. */
	private static final Set<String> KOTLIN_ASYNC_TYPES = Set.of(COROUTINES_FLOW, "kotlinx.coroutines.Deferred");

	/** Kotlin's lazy collections, read after the return as a {@code Stream} is. */
	private static final Set<String> KOTLIN_LAZY_TYPES = Set.of("kotlin.sequences.Sequence");

	/**
	 * Whether Spring's proxies call a suspend function as a publisher (as they decide it), and
	 * adapt {@code Flow} and {@code Deferred}: kotlinx-coroutines-reactor, with kotlin-reflect for
	 * the call.
	 */
	private static final boolean COROUTINES_REACTOR_PRESENT = ClassUtils.isPresent("kotlinx.coroutines.reactor.MonoKt",
			LockOperationSource.class.getClassLoader()) && KotlinDetector.isKotlinReflectPresent();

	private final @Nullable StringValueResolver placeholders;

	private final boolean reactorPresent;

	private final boolean coroutinesReactorPresent;

	private final BackendChoice<?> backends;

	/**
	 * @param placeholders resolves {@code ${...}} in annotation attributes; {@code null} leaves
	 * them as they are
	 */
	public LockOperationSource(@Nullable StringValueResolver placeholders) {
		this(placeholders, BackendChoice.only(true));
	}

	/**
	 * @param placeholders resolves {@code ${...}} in annotation attributes; {@code null} leaves
	 * them as they are
	 * @param backends the backends an annotation's {@code backend} can name
	 */
	public LockOperationSource(@Nullable StringValueResolver placeholders, BackendChoice<?> backends) {
		this(placeholders, LockAspectSupport.REACTOR_PRESENT, COROUTINES_REACTOR_PRESENT, backends);
	}

	/**
	 * For tests: {@code reactorPresent} false is an application without Reactor,
	 * {@code coroutinesReactorPresent} false one without kotlinx-coroutines-reactor (or
	 * kotlin-reflect).
	 */
	LockOperationSource(@Nullable StringValueResolver placeholders, boolean reactorPresent,
			boolean coroutinesReactorPresent) {
		this(placeholders, reactorPresent, coroutinesReactorPresent, BackendChoice.only(true));
	}

	private LockOperationSource(@Nullable StringValueResolver placeholders, boolean reactorPresent,
			boolean coroutinesReactorPresent, BackendChoice<?> backends) {
		this.backends = backends;
		this.placeholders = placeholders;
		this.reactorPresent = reactorPresent;
		this.coroutinesReactorPresent = reactorPresent && coroutinesReactorPresent;
	}

	/**
	 * Whether {@code targetClass} can have {@link DistributedLock} methods: false when neither it
	 * nor a supertype declares one, which is judged once per type.
	 */
	public boolean isCandidateClass(Class<?> targetClass) {
		return this.lockTypes.hasAnnotatedMethods(targetClass);
	}

	/**
	 * The lock operation of {@code method} when called on {@code targetClass}, or {@code null} if
	 * it is not annotated.
	 * @throws LockConfigurationException if the annotation is invalid
	 */
	public @Nullable LockOperation getOperation(Method method, @Nullable Class<?> targetClass) {
		MethodClassKey cacheKey = new MethodClassKey(method, targetClass);
		Object cached = this.cache.get(cacheKey);
		if (cached == null) {
			LockOperation operation = resolve(method, targetClass);
			cached = (operation != null) ? operation : NONE;
			this.cache.put(cacheKey, cached);
		}
		return (cached != NONE) ? (LockOperation) cached : null;
	}

	private @Nullable LockOperation resolve(Method method, @Nullable Class<?> targetClass) {
		Method specific = BridgeMethodResolver.findBridgedMethod(AopUtils.getMostSpecificMethod(method, targetClass));
		Class<?> userClass = ClassUtils.getUserClass((targetClass != null) ? targetClass : method.getDeclaringClass());
		LockAnnotation annotation = LockAnnotation.find(specific, method, userClass);
		if (annotation == null) {
			return null;
		}
		String where = annotation.where();
		String name = resolvePlaceholders(annotation.name());
		if (!StringUtils.hasText(name)) {
			name = userClass.getSimpleName() + "." + specific.getName();
		}
		if (annotation.permits() > 0) {
			checkSamePermits(name, annotation);
		}
		LockOptions options = LockOptions.defaults();
		Duration waitTime = parseDuration(annotation.waitTime(), "waitTime", where);
		if (waitTime != null) {
			if (waitTime.isNegative()) {
				throw new LockConfigurationException(where + " has a negative waitTime '" + annotation.waitTime() + "'",
						"Use a waitTime of zero (one attempt) or more, such as waitTime = \"5s\".");
			}
			options = options.waitTime(waitTime);
		}
		Duration leaseTime = parseDuration(annotation.leaseTime(), "leaseTime", where);
		if (leaseTime != null) {
			if (leaseTime.compareTo(LockOptions.MIN_LEASE_TIME) < 0) {
				throw new LockConfigurationException(where + " has leaseTime '" + annotation.leaseTime()
						+ "', but a lease must last at least 1ms (a shorter one would expire as it is taken)",
						"Use a leaseTime of at least 1ms, such as leaseTime = \"30s\".");
			}
			options = options.leaseTime(leaseTime);
		}
		if (annotation.onLocked() == OnLocked.SKIP && specific.getReturnType().isPrimitive()
				&& specific.getReturnType() != void.class) {
			throw new LockConfigurationException(
					where + " uses " + annotation.onLockedAttribute() + " = SKIP but returns "
							+ specific.getReturnType().getName()
							+ ", which has no empty value",
					"Return a wrapper type, Optional or void, or use " + annotation.onLockedAttribute() + " = THROW.");
		}
		checkReturnType(specific, where);
		if (annotation.onLocked() == OnLocked.SKIP) {
			checkKotlinResultIsNullable(specific, where, annotation.onLockedAttribute());
		}
		String keyText = annotation.key();
		Expression expression = null;
		if (StringUtils.hasText(keyText)) {
			expression = parseKey(keyText, specific, where);
		}
		// before the adapter: without Reactor, its error would ask to add a dependency that does not help
		boolean suspending = KotlinDetector.isSuspendingFunction(specific);
		if (annotation.permits() > 0 && (suspending
				|| (ReactiveAdapterRegistry.getSharedInstance().getAdapter(specific.getReturnType()) != null
						&& !CompletionStage.class.isAssignableFrom(specific.getReturnType())))) {
			throw new LockConfigurationException(where + ": a method returning a reactive type or a Kotlin suspend "
					+ "function cannot take a permit yet", "Take the permit with LockTemplate.acquirePermit(...) on a "
							+ "thread that may block, or return a CompletableFuture.");
		}
		ReactiveAdapter adapter = reactiveAdapter(specific, where);
		List<LockOperation.KeysExpression> keys = new ArrayList<>();
		if (annotation.keys().length > 0) {
			if (StringUtils.hasText(keyText)) {
				throw new LockConfigurationException(where + " has both key and keys",
						"Use key = \"...\" for one key, or keys = {...} for several (keys = {\"" + keyText.trim()
								+ "\", ...}).");
			}
			if (suspending || (adapter != null && !CompletionStage.class.isAssignableFrom(specific.getReturnType()))) {
				throw new LockConfigurationException(where + " uses keys, which a method returning a reactive type "
						+ "or a Kotlin suspend function cannot use yet",
						"Lock one key, or take the keys with LockTemplate.acquireAll(...) on a thread that may block.");
			}
			for (String text : annotation.keys()) {
				if (!StringUtils.hasText(text)) {
					throw new LockConfigurationException(where + " has an empty expression in keys",
							"Give each element of keys an expression, such as keys = {\"#from.id\", \"#to.id\"}.");
				}
				keys.add(new LockOperation.KeysExpression(parseKey(text, specific, where), text));
			}
		}
		this.backends.check(annotation.backend(), where);
		if (annotation.mode() == LockMode.READ) {
			ReadModeCheck.check(this.backends, annotation, where, suspending || (adapter != null
					&& !CompletionStage.class.isAssignableFrom(specific.getReturnType())));
			options = options.mode(LockMode.READ);
		}
		return new LockOperation(specific, name, expression, keyText, options, annotation.onLocked(), adapter,
				suspending, List.copyOf(keys), annotation.permits(), annotation.backend());
	}

	/** SEM-5 at startup: the methods of one application agree on the permits of each semaphore name. */
	private void checkSamePermits(String name, LockAnnotation annotation) {
		// A name on two backends is two semaphores (NBK-6); backend names have no ':'.
		LockAnnotation first = this.semaphores.putIfAbsent(annotation.backend() + ":" + name, annotation);
		if (first != null && first.permits() != annotation.permits()) {
			throw new LockConfigurationException(annotation.where() + " gives semaphore '" + name + "' "
					+ annotation.permits() + " permits, but " + first.where() + " gives it " + first.permits()
					+ ": one semaphore has one number of permits",
					"Give both the same permits (one constant), or name them apart if they are two semaphores.");
		}
	}

	/**
	 * The adapter through which the lock is held for the life of the method's result, or
	 * {@code null} when the lock is held until the method returns (or, for a stage, until the stage
	 * completes). A Kotlin suspend function is called by Spring's proxy as a {@code Mono} (a
	 * {@code Flux} when it returns a {@code Flow}) that runs its body, with
	 * kotlinx-coroutines-reactor; that publisher is what the lock wraps.
	 * @throws LockConfigurationException for a reactive result or a suspend function that the lock
	 * could not hold for its life: without Reactor (or kotlinx-coroutines-reactor) the lock would be
	 * released when the method returns, before anything subscribes or at the first suspension
	 */
	private @Nullable ReactiveAdapter reactiveAdapter(Method method, String where) {
		ReactiveAdapterRegistry registry = ReactiveAdapterRegistry.getSharedInstance();
		if (KotlinDetector.isSuspendingFunction(method)) {
			if (!this.coroutinesReactorPresent) {
				throw new LockConfigurationException(where + " is a Kotlin suspend function: Spring calls it as a "
						+ "publisher only with kotlinx-coroutines-reactor and kotlin-reflect, not both on the class "
						+ "path, so the lock would be released at the function's first suspension, with the rest of "
						+ "its body unlocked", "Add org.jetbrains.kotlinx:kotlinx-coroutines-reactor (it brings Reactor) "
								+ "and org.jetbrains.kotlin:kotlin-reflect to the application's dependencies.");
			}
			boolean flow = COROUTINES_FLOW.equals(new MethodParameter(method, -1).getParameterType().getName());
			return registry.getAdapter(ClassUtils.resolveClassName(
					flow ? "reactor.core.publisher.Flux" : "reactor.core.publisher.Mono", LockOperationSource.class.getClassLoader()));
		}
		Class<?> type = method.getReturnType();
		ReactiveAdapter adapter = registry.getAdapter(type);
		if (adapter != null && !this.reactorPresent && !CompletionStage.class.isAssignableFrom(type)) {
			throw new LockConfigurationException(where + " returns " + type.getName()
					+ ", a reactive type: Holdfast holds a lock for the life of a reactive result through Reactor, "
					+ "which is not on the class path, so the lock would be released when the method returns, "
					+ "before anything subscribes", "Add io.projectreactor:reactor-core to the application's dependencies.");
		}
		return adapter;
	}

	/**
	 * Fails on return types that carry work past the return without telling when it is done: the
	 * lock would be released when the method returns, with that work still to run or be read.
	 */
	private void checkReturnType(Method method, String where) {
		Class<?> type = method.getReturnType();
		// An @Async method's Future is made by Spring's async advisor, which runs in front of the
		// lock's: the lock then wraps the method's body on the executor, and the body's own Future
		// is done when it returns (AsyncResult, CompletableFuture.completedFuture).
		boolean async = AnnotatedElementUtils.hasAnnotation(method, Async.class)
				|| AnnotatedElementUtils.hasAnnotation(method.getDeclaringClass(), Async.class);
		if (!async && Future.class.isAssignableFrom(type) && !CompletionStage.class.isAssignableFrom(type)) {
			throw new LockConfigurationException(where + " returns " + type.getName()
					+ ", a Future that is not a CompletionStage: nothing tells when its work is done, so the lock "
					+ "would be released when the method returns and two calls could run that work at once",
					"Return CompletableFuture/CompletionStage, or a Mono/Flux: the lock is then held until it completes "
							+ "(for pool.submit(task), return CompletableFuture.supplyAsync(task, pool)).");
		}
		if (KOTLIN_LAZY_TYPES.contains(type.getName())) {
			throw new LockConfigurationException(where + " returns " + type.getName()
					+ ", a sequence that is computed as it is read, after the method returns and the lock is released",
					"Return a List, or consume the sequence inside the method.");
		}
		if (KOTLIN_ASYNC_TYPES.contains(type.getName()) && !this.coroutinesReactorPresent) {
			throw new LockConfigurationException(where + " returns " + type.getName() + ", whose work runs after the "
					+ "method returns; Holdfast follows it only through kotlinx-coroutines-reactor, which is not on the "
					+ "class path, so the lock would be released with that work still to run",
					"Add org.jetbrains.kotlinx:kotlinx-coroutines-reactor to the application's dependencies, or "
							+ "make the method a suspend function that returns the result.");
		}
		if (BaseStream.class.isAssignableFrom(type)) {
			throw new LockConfigurationException(where + " returns " + type.getName()
					+ ", a stream that is read after the method returns, when the lock is already released",
					"Return a List, or consume the stream inside the method.");
		}
	}

	/**
	 * Fails when SKIP would return {@code null} from a Kotlin function whose result type is not
	 * nullable: Kotlin checks no nullability where it receives the result of a Kotlin function (nor
	 * where a suspend function resumes it), so the null would surface later, as a
	 * {@code NullPointerException} far from here. Spring reads the Kotlin type: {@code Unit} is
	 * {@code void}, {@code String?} is optional. Results with an empty value of their own
	 * ({@code Optional}, a future, a publisher or a {@code Flow}) are not {@code null} when skipped.
	 */
	private static void checkKotlinResultIsNullable(Method method, String where, String onLocked) {
		if (!KotlinDetector.isKotlinReflectPresent() || !KotlinDetector.isKotlinType(method.getDeclaringClass())) {
			return;
		}
		MethodParameter result = new MethodParameter(method, -1);
		Class<?> type = result.getParameterType();
		if (type == void.class || type == Optional.class || CompletionStage.class.isAssignableFrom(type)
				|| ReactiveAdapterRegistry.getSharedInstance().getAdapter(type) != null || result.isOptional()) {
			return;
		}
		throw new LockConfigurationException(where + " uses " + onLocked + " = SKIP, which makes it return null, but "
				+ "its "
				+ "Kotlin result type " + type.getName() + " is not nullable",
				"Declare the result nullable (" + type.getSimpleName() + "?), or use " + onLocked + " = THROW.");
	}

	private String resolvePlaceholders(String value) {
		if (this.placeholders == null || !value.contains("${")) {
			return value;
		}
		String resolved = this.placeholders.resolveStringValue(value);
		return (resolved != null) ? resolved : value;
	}

	private @Nullable Duration parseDuration(String text, String attribute, String where) {
		if (!StringUtils.hasText(text)) {
			return null;
		}
		String resolved = resolvePlaceholders(text);
		try {
			return DurationStyle.detectAndParse(resolved.trim());
		}
		catch (RuntimeException ex) {
			throw new LockConfigurationException(
					where + " has " + attribute + " = \"" + text + "\""
							+ (resolved.equals(text) ? "" : " (resolved to \"" + resolved + "\")")
							+ ", which is not a duration",
					"Write " + attribute + " as a duration such as \"500ms\", \"5s\", \"2m\" or \"PT5S\".");
		}
	}

	private Expression parseKey(String text, Method method, String where) {
		if (text.contains("${")) {
			throw new LockConfigurationException(where + " has key = \"" + text
					+ "\", which contains a ${...} placeholder; placeholders are not resolved in key expressions, "
					+ "where a property's value would become SpEL code",
					"Put the placeholder in the name (name = \"orders-${tenant}\"), or read the property as data "
							+ "in the expression: key = \"@environment.getProperty('tenant') + ':' + #order.id\".");
		}
		Expression expression;
		try {
			expression = this.parser.parseExpression(text);
		}
		catch (ParseException ex) {
			throw new LockConfigurationException(
					where + " has a malformed key expression \"" + text + "\": " + ex.getSimpleMessage(),
					"Fix the SpEL expression in the key attribute, such as key = \"#order.id\".");
		}
		checkVariables(expression, text, method, where);
		checkIdentityParameter(expression, text, method, where);
		return expression;
	}

	/**
	 * Fails when the whole key is one parameter ({@code #order}, {@code #p0}) of a concrete type
	 * whose {@code toString()} is {@link Object}'s, or of a record type with a component of such a
	 * type (a record key renders its components): every call would lock a key of its own.
	 */
	private void checkIdentityParameter(Expression expression, String text, Method method, String where) {
		if (!(expression instanceof SpelExpression spel) || !(spel.getAST() instanceof VariableReference)) {
			return;
		}
		int index = parameterIndex(text.trim().substring(1), method);
		if (index < 0) {
			return;
		}
		Class<?> type = method.getParameterTypes()[index];
		DeclaredIdentity identity = IdentityStrings.findDeclaredIdentity(type);
		if (identity == null) {
			return;
		}
		String problem = "the key would differ per call and per JVM, and the lock would exclude nothing";
		if (identity.path().isEmpty()) {
			throw new LockConfigurationException(where + " has key = \"" + text + "\", a parameter of type "
					+ type.getTypeName() + ", whose toString() is Object's identity string (class name and hash code): "
					+ problem,
					"Key on a value that identifies the argument, such as key = \"" + text.trim()
							+ ".id\", or override toString() in " + type.getSimpleName() + ".");
		}
		throw new LockConfigurationException(where + " has key = \"" + text + "\", a parameter of record type "
				+ type.getTypeName() + " whose component " + identity.path() + " is a " + identity.type().getTypeName()
				+ ", whose toString() is Object's identity string (class name and hash code); a record key renders "
				+ "its components, so " + problem,
				"Key on a value that identifies it, such as key = \"" + text.trim() + "." + identity.path()
						+ ".id\", or override toString() in " + identity.type().getSimpleName()
						+ ". A record's own toString() is not used for its key; to key on it, write key = \""
						+ text.trim() + ".toString()\".");
	}

	/** The index of the parameter that {@code #variable} names, or -1. */
	private int parameterIndex(String variable, Method method) {
		if (variable.matches("[pa]\\d+")) {
			int index = Integer.parseInt(variable.substring(1));
			return (index < method.getParameterCount()) ? index : -1;
		}
		String[] names = this.parameterNames.getParameterNames(method);
		return (names != null) ? Arrays.asList(names).indexOf(variable) : -1;
	}

	/**
	 * Fails on {@code #name} references that match no parameter of the method, and on every
	 * {@code #name} other than {@code #p0}/{@code #a0}, {@code #root} and {@code #this} when the
	 * class was compiled without parameter names: each would be {@code null} at the call.
	 */
	private void checkVariables(Expression expression, String text, Method method, String where) {
		if (!(expression instanceof SpelExpression spel)) {
			return;
		}
		String[] names = this.parameterNames.getParameterNames(method);
		List<String> known = new ArrayList<>(List.of("root", "this"));
		for (int i = 0; i < method.getParameterCount(); i++) {
			known.add("p" + i);
			known.add("a" + i);
		}
		if (names != null) {
			known.addAll(Arrays.asList(names));
		}
		List<String> unknown = new ArrayList<>();
		collectVariables(spel.getAST(), known, unknown);
		if (unknown.isEmpty()) {
			return;
		}
		if (names == null && !unknown.stream().allMatch((variable) -> variable.matches("#[pa]\\d+"))) {
			throw new LockConfigurationException(where + " has key expression \"" + text + "\" that refers to "
					+ String.join(", ", unknown) + " by name, but " + method.getDeclaringClass().getName()
					+ " was compiled without parameter names (javac -parameters), so the name would be null at every call",
					"Compile with -parameters (Spring Boot's parent does), or use #p0/#a0 (the first parameter) "
							+ "instead of the name.");
		}
		throw new LockConfigurationException(
				where + " has key expression \"" + text + "\" that refers to " + String.join(", ", unknown)
						+ ", but the method's parameters are " + ((names != null) ? Arrays.toString(names) : "unnamed")
						+ " (also available: #p0.., #a0.., #root.args, #root.method, @beanName)",
				"Refer to a parameter by its name or position, such as key = \"#p0\".");
	}

	private static void collectVariables(SpelNode node, List<String> known, List<String> unknown) {
		if (node instanceof VariableReference) {
			String name = node.toStringAST().substring(1);
			if (!known.contains(name)) {
				unknown.add("#" + name);
			}
		}
		for (int i = 0; i < node.getChildCount(); i++) {
			collectVariables(node.getChild(i), known, unknown);
		}
	}

}
