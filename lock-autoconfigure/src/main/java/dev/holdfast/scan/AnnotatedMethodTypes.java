package dev.holdfast.scan;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.core.annotation.MergedAnnotations.SearchStrategy;
import org.springframework.core.annotation.RepeatableContainers;
import org.springframework.util.Assert;
import org.springframework.util.ConcurrentReferenceHashMap;
import org.springframework.util.ReflectionUtils;

/**
 * Whether a class can have a method on which Spring's search of the type hierarchy
 * ({@code AnnotatedElementUtils.findMergedAnnotation}) finds one annotation: only if the class, a
 * superclass or an interface declares a method that carries it, directly or as a meta-annotation.
 * Each type of a hierarchy is looked at once (its declared methods' own annotations), so the
 * classes of Spring's beans and of the application's other beans, which share most of their
 * hierarchies, are passed over after one look, instead of a search of the hierarchy of each of
 * their methods (issue 34, item 14: that search, by the advisor and the job post-processor, was a
 * large part of what Holdfast added to a startup).
 */
public final class AnnotatedMethodTypes {

	private final List<Class<? extends Annotation>> annotations;

	/** Per type, whether it declares an annotated method itself: one entry per class looked at, softly held. */
	private final Map<Class<?>, Boolean> declaring = new ConcurrentReferenceHashMap<>(256);

	/** For methods that carry any of {@code annotations}. */
	@SafeVarargs
	public AnnotatedMethodTypes(Class<? extends Annotation>... annotations) {
		Assert.notEmpty(annotations, "'annotations' must not be empty");
		this.annotations = List.of(annotations);
	}

	/**
	 * Whether {@code type}, one of its superclasses or one of its interfaces declares a method that
	 * carries the annotation; when false, no method of {@code type} has it.
	 */
	public boolean hasAnnotatedMethods(Class<?> type) {
		Deque<Class<?>> pending = new ArrayDeque<>();
		Set<Class<?>> seen = new HashSet<>();
		pending.add(type);
		while (!pending.isEmpty()) {
			Class<?> current = pending.poll();
			if (!seen.add(current)) {
				continue;
			}
			if (declaresAnnotatedMethods(current)) {
				return true;
			}
			Class<?> superclass = current.getSuperclass();
			if (superclass != null) {
				pending.add(superclass);
			}
			Collections.addAll(pending, current.getInterfaces());
		}
		return false;
	}

	private boolean declaresAnnotatedMethods(Class<?> type) {
		Boolean declares = this.declaring.get(type);
		if (declares == null) {
			declares = lookAt(type);
			this.declaring.put(type, declares);
		}
		return declares;
	}

	private boolean lookAt(Class<?> type) {
		// The JDK's classes carry no annotation of Holdfast's (Spring's scanner skips them alike).
		if (type.getName().startsWith("java.")) {
			return false;
		}
		for (Method method : ReflectionUtils.getDeclaredMethods(type)) {
			MergedAnnotations found = MergedAnnotations.from(method, SearchStrategy.DIRECT, RepeatableContainers.none());
			if (this.annotations.stream().anyMatch(found::isPresent)) {
				return true;
			}
		}
		return false;
	}

}
