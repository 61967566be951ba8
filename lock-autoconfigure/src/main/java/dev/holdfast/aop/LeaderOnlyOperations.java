package dev.holdfast.aop;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.UnaryOperator;

import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.AopUtils;
import org.springframework.core.BridgeMethodResolver;
import org.springframework.core.MethodClassKey;
import org.springframework.core.annotation.AnnotatedElementUtils;

import dev.holdfast.LeaderOnly;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.scan.AnnotatedMethodTypes;
import dev.holdfast.scan.BackendChoice;

/**
 * The {@link LeaderOnly} annotation of a method, resolved once per method and target class, and
 * the groups that annotated methods name (joined when the application starts).
 */
public class LeaderOnlyOperations {

	/**
	 * A method's group, what a call does while not leading it, and the backend the group is
	 * elected on ({@code ""} for the default one).
	 */
	public record Operation(String group, LeaderOnly.OnNotLeader onNotLeader, String backend) {
	}

	private static final Object NONE = new Object();

	/** One entry per method of the classes that can have {@link LeaderOnly} methods ({@link #isCandidateClass}). */
	private final ConcurrentHashMap<MethodClassKey, Object> cache = new ConcurrentHashMap<>();

	private final AnnotatedMethodTypes leaderOnlyTypes = new AnnotatedMethodTypes(LeaderOnly.class);

	/** The groups of each backend: bounded by the annotations. */
	private final Map<String, Set<String>> groups = new ConcurrentHashMap<>();

	private final UnaryOperator<String> placeholders;

	private final BackendChoice<?> backends;

	/**
	 * @param placeholders resolves {@code ${...}} in group names
	 * @param backends the backends an annotation's {@code backend} can name
	 */
	public LeaderOnlyOperations(UnaryOperator<String> placeholders, BackendChoice<?> backends) {
		this.placeholders = placeholders;
		this.backends = backends;
	}

	/**
	 * Whether {@code targetClass} can have {@link LeaderOnly} methods: false when neither it nor a
	 * supertype declares one, which is judged once per type (DESIGN.md BSL-10).
	 */
	public boolean isCandidateClass(Class<?> targetClass) {
		return this.leaderOnlyTypes.hasAnnotatedMethods(targetClass);
	}

	/**
	 * The operation of {@code method} called on {@code targetClass}, or {@code null} if it is not
	 * {@code @LeaderOnly}.
	 * @throws LockConfigurationException for an empty group, or {@code SKIP} on a primitive result
	 */
	public @Nullable Operation get(Method method, @Nullable Class<?> targetClass) {
		Object found = this.cache.computeIfAbsent(new MethodClassKey(method, targetClass),
				(key) -> resolve(method, targetClass));
		return (found == NONE) ? null : (Operation) found;
	}

	/** The groups of the annotated methods resolved so far, sorted, by backend. */
	public Map<String, Set<String>> groups() {
		Map<String, Set<String>> groups = new TreeMap<>();
		this.groups.forEach((backend, names) -> groups.put(backend, new TreeSet<>(names)));
		return groups;
	}

	private Object resolve(Method method, @Nullable Class<?> targetClass) {
		Method specific = BridgeMethodResolver.findBridgedMethod(AopUtils.getMostSpecificMethod(method, targetClass));
		LeaderOnly annotation = AnnotatedElementUtils.findMergedAnnotation(specific, LeaderOnly.class);
		if (annotation == null) {
			return NONE;
		}
		String where = specific.getDeclaringClass().getName() + "." + specific.getName();
		String group = this.placeholders.apply(annotation.group());
		if (group == null || group.isBlank()) {
			throw new LockConfigurationException("@LeaderOnly on " + where + " names no group",
					"Name the leader group: @LeaderOnly(\"group\").");
		}
		Class<?> result = specific.getReturnType();
		if (annotation.onNotLeader() == LeaderOnly.OnNotLeader.SKIP && result.isPrimitive() && result != void.class) {
			throw new LockConfigurationException("@LeaderOnly on " + where + " skips calls while not leading, but "
					+ "returns " + result.getName() + ", which has no empty value",
					"Return a wrapper type, Optional or void, or use onNotLeader = THROW.");
		}
		this.backends.check(annotation.backend(), "@LeaderOnly on " + where);
		this.groups.computeIfAbsent(annotation.backend(), (backend) -> ConcurrentHashMap.newKeySet()).add(group);
		return new Operation(group, annotation.onNotLeader(), annotation.backend());
	}

}
