package dev.holdfast.aop;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.BridgeMethodResolver;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

import dev.holdfast.DistributedLock;
import dev.holdfast.DistributedSemaphore;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.scan.AnnotatedMethodTypes;

/**
 * Checks every {@link DistributedLock} method of a bean when the bean is created, so that what
 * would fail or silently run unlocked fails the application context at startup, naming the
 * method, instead:
 * <ul>
 * <li>a malformed expression or duration, or a key that would render as an identity string
 * (resolved by the {@link LockOperationSource});</li>
 * <li>a method that Spring's proxy cannot intercept, so that calls to it would never take the
 * lock: {@code private} or {@code static} methods, {@code final} methods of a class-based
 * (CGLIB) proxy, and, where the bean is an interface-based JDK proxy
 * ({@code spring.aop.proxy-target-class=false}), methods that no proxied interface declares.</li>
 * </ul>
 * It runs after the auto-proxy creator (which Spring orders first), so it sees the proxy that
 * callers will get. A method that is also Spring's {@code @Scheduled} gets a WARN, once: the lock
 * keeps its runs from overlapping, but every instance still runs each tick
 * ({@code @SingleInstanceScheduled} runs each tick once).
 */
public class LockOperationValidator implements BeanPostProcessor {

	private static final Log logger = LogFactory.getLog(LockOperationValidator.class);

	private final ObjectProvider<LockOperationSource> operations;

	/** Methods warned about by {@link #warnIfScheduled}: one entry per annotated method at most. */
	private final Set<Method> warnedScheduled = ConcurrentHashMap.newKeySet();

	/** Which types can have {@link DistributedLock} methods, judged once per type of their hierarchies. */
	private final AnnotatedMethodTypes lockTypes = new AnnotatedMethodTypes(DistributedLock.class,
			DistributedSemaphore.class);

	public LockOperationValidator(ObjectProvider<LockOperationSource> operations) {
		this.operations = operations;
	}

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		Class<?> targetClass = ClassUtils.getUserClass(AopUtils.getTargetClass(bean));
		if (!AnnotationUtils.isCandidateClass(targetClass, LockAnnotation.TYPES)
				|| !this.lockTypes.hasAnnotatedMethods(targetClass)) {
			return bean;
		}
		ReflectionUtils.doWithMethods(targetClass, (method) -> {
			LockOperation operation = this.operations.getObject().getOperation(method, targetClass);
			String annotation = (operation != null) ? operation.annotation() : LockAnnotation.nameOf(false);
			warnIfScheduled(method, annotation);
			String problem = interceptionProblem(bean, targetClass, method);
			if (problem != null) {
				throw new LockConfigurationException(annotation + " on " + targetClass.getName() + "."
						+ method.getName() + " (bean '" + beanName + "') " + problem
						+ ": Spring's proxy cannot intercept calls to it, so it would run without the lock",
						"Make the method public and non-final, and call it through the bean (from another bean), "
								+ "or lock inside it with LockTemplate.");
			}
			// Synthetic methods are the compiler's, never called through the proxy: Kotlin copies the
			// annotations of an open suspend function to its static slow$suspendImpl.
		}, (method) -> !method.isBridge() && !method.isSynthetic() && LockAnnotation.isOn(method));
		return bean;
	}

	/**
	 * A lock on a {@code @Scheduled} method keeps runs from overlapping, which may be all that is
	 * wanted, so this only warns: users coming from ShedLock expect it to run each tick once.
	 */
	private void warnIfScheduled(Method method, String annotation) {
		if (!AnnotatedElementUtils.findMergedRepeatableAnnotations(method, Scheduled.class).isEmpty()
				&& this.warnedScheduled.add(method) && logger.isWarnEnabled()) {
			logger.warn(annotation + " on " + method.getDeclaringClass().getName() + "."
					+ method.getName()
					+ " is also @Scheduled: every instance of the application still runs each tick, and the lock "
					+ "only keeps the runs from overlapping; it does not make a tick run once. To run each tick on one "
					+ "instance, replace @Scheduled and @DistributedLock with @SingleInstanceScheduled.");
		}
	}

	/** Why calls to {@code method} through {@code bean} would not be intercepted, or {@code null}. */
	private static @Nullable String interceptionProblem(Object bean, Class<?> targetClass, Method method) {
		int modifiers = method.getModifiers();
		if (Modifier.isStatic(modifiers)) {
			return "is static";
		}
		if (Modifier.isPrivate(modifiers)) {
			return "is private";
		}
		if (AopUtils.isJdkDynamicProxy(bean)) {
			return declaredOnAProxiedInterface(bean.getClass(), targetClass, method) ? null
					: "is declared on no interface of the bean, and the bean is an interface-based (JDK) proxy "
							+ "(spring.aop.proxy-target-class=false), which only intercepts interface methods";
		}
		if (Modifier.isFinal(modifiers)) {
			return "is final, and a class-based proxy cannot override it";
		}
		return null;
	}

	/** Whether an interface of the JDK proxy class (opaque or not) declares {@code method}. */
	private static boolean declaredOnAProxiedInterface(Class<?> proxyClass, Class<?> targetClass, Method method) {
		for (Class<?> type : proxyClass.getInterfaces()) {
			for (Method declared : type.getMethods()) {
				Method implementation = BridgeMethodResolver
					.findBridgedMethod(AopUtils.getMostSpecificMethod(declared, targetClass));
				if (implementation.equals(method)) {
					return true;
				}
			}
		}
		return false;
	}

}
