package dev.holdfast.aop;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;

import org.jspecify.annotations.Nullable;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.BridgeMethodResolver;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

import dev.holdfast.DistributedLock;
import dev.holdfast.LockConfigurationException;

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
 * callers will get.
 */
public class LockOperationValidator implements BeanPostProcessor {

	private final ObjectProvider<LockOperationSource> operations;

	public LockOperationValidator(ObjectProvider<LockOperationSource> operations) {
		this.operations = operations;
	}

	@Override
	public Object postProcessAfterInitialization(Object bean, String beanName) {
		Class<?> targetClass = ClassUtils.getUserClass(AopUtils.getTargetClass(bean));
		if (!AnnotationUtils.isCandidateClass(targetClass, DistributedLock.class)) {
			return bean;
		}
		ReflectionUtils.doWithMethods(targetClass, (method) -> {
			this.operations.getObject().getOperation(method, targetClass);
			String problem = interceptionProblem(bean, targetClass, method);
			if (problem != null) {
				throw new LockConfigurationException("@DistributedLock on " + targetClass.getName() + "."
						+ method.getName() + " (bean '" + beanName + "') " + problem
						+ ": Spring's proxy cannot intercept calls to it, so it would run without the lock",
						"Make the method public and non-final, and call it through the bean (from another bean), "
								+ "or lock inside it with LockTemplate.");
			}
		}, (method) -> !method.isBridge() && AnnotatedElementUtils.hasAnnotation(method, DistributedLock.class));
		return bean;
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
