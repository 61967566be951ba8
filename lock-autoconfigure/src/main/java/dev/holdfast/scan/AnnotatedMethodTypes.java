package dev.holdfast.scan;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.Deque;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.springframework.core.annotation.MergedAnnotations;
import org.springframework.core.annotation.MergedAnnotations.SearchStrategy;
import org.springframework.core.annotation.RepeatableContainers;
import org.springframework.util.Assert;
import org.springframework.util.ReflectionUtils;

import dev.holdfast.DistributedLock;
import dev.holdfast.DistributedSemaphore;
import dev.holdfast.LeaderOnly;
import dev.holdfast.SingleInstanceScheduled;

/**
 * Whether a class can have a method on which Spring's search of the type hierarchy
 * ({@code AnnotatedElementUtils.findMergedAnnotation}) finds one annotation: only if the class, a
 * superclass or an interface declares a method that carries it, directly or as a meta-annotation.
 * Each type of a hierarchy is looked at once (its declared methods' own annotations), so the
 * classes of Spring's beans and of the application's other beans, which share most of their
 * hierarchies, are passed over after one look, instead of a search of the hierarchy of each of
 * their methods (issue 34, item 14: that search, by the advisor and the job post-processor, was a
 * large part of what Holdfast added to a startup).
 * <p>
 * The look is shared: it notes at once which of Holdfast's method annotations ({@link #KNOWN}) a
 * type's declared methods carry, in one cache for the JVM, so that the advisors, the job
 * post-processor, the validator and the leader groups, which each ask about every bean, look at a
 * type once between them (a class's methods and their annotations never change).
 */
public final class AnnotatedMethodTypes {

	/** The method annotations that can be asked about: Holdfast's. */
	static final List<Class<? extends Annotation>> KNOWN = List.of(DistributedLock.class, DistributedSemaphore.class,
			SingleInstanceScheduled.class, LeaderOnly.class);

	/**
	 * Per type, which of {@link #KNOWN} (bit {@code i} for {@code KNOWN.get(i)}) its declared methods
	 * carry: kept with the class itself, so that it pins no class loader and goes with the class.
	 */
	private static final ClassValue<Integer> DECLARING = new ClassValue<>() {

		@Override
		protected Integer computeValue(Class<?> type) {
			return lookAt(type);
		}

	};

	/** The bits of this instance's annotations in {@link #DECLARING}'s values. */
	private final int mask;

	/** For methods that carry any of {@code annotations}, each one of {@link #KNOWN}. */
	@SafeVarargs
	public AnnotatedMethodTypes(Class<? extends Annotation>... annotations) {
		Assert.notEmpty(annotations, "'annotations' must not be empty");
		int mask = 0;
		for (Class<? extends Annotation> annotation : annotations) {
			int index = KNOWN.indexOf(annotation);
			Assert.isTrue(index >= 0, () -> annotation.getName() + " is not one of " + KNOWN);
			mask |= 1 << index;
		}
		this.mask = mask;
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
			if ((declaredAnnotations(current) & this.mask) != 0) {
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

	private static int declaredAnnotations(Class<?> type) {
		return DECLARING.get(type);
	}

	private static int lookAt(Class<?> type) {
		// The JDK's classes carry no annotation of Holdfast's (Spring's scanner skips them alike).
		if (type.getName().startsWith("java.")) {
			return 0;
		}
		int found = 0;
		for (Method method : ReflectionUtils.getDeclaredMethods(type)) {
			MergedAnnotations annotations = MergedAnnotations.from(method, SearchStrategy.DIRECT,
					RepeatableContainers.none());
			for (int i = 0; i < KNOWN.size(); i++) {
				if (annotations.isPresent(KNOWN.get(i))) {
					found |= 1 << i;
				}
			}
		}
		return found;
	}

}
