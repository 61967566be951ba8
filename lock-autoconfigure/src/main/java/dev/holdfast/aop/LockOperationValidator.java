package dev.holdfast.aop;

import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

import dev.holdfast.DistributedLock;

/**
 * Resolves every {@link DistributedLock} method of a bean when the bean is created, so that a
 * malformed expression or duration fails the application context at startup, naming the method,
 * instead of failing the first call.
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
		ReflectionUtils.doWithMethods(targetClass, (method) -> this.operations.getObject().getOperation(method, targetClass),
				(method) -> !method.isBridge() && AnnotatedElementUtils.hasAnnotation(method, DistributedLock.class));
		return bean;
	}

}
