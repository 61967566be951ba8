package dev.holdfast.aop;

import java.lang.reflect.Method;

import org.jspecify.annotations.Nullable;

/**
 * The root object of key expressions: {@code #root.method}, {@code #root.args},
 * {@code #root.target}, {@code #root.targetClass}, {@code #root.methodName}.
 */
public final class LockExpressionRoot {

	private final Method method;

	private final Object[] args;

	private final @Nullable Object target;

	private final Class<?> targetClass;

	LockExpressionRoot(Method method, Object[] args, @Nullable Object target, @Nullable Class<?> targetClass) {
		this.method = method;
		this.args = args;
		this.target = target;
		this.targetClass = (targetClass != null) ? targetClass : method.getDeclaringClass();
	}

	public Method getMethod() {
		return this.method;
	}

	public String getMethodName() {
		return this.method.getName();
	}

	public Object[] getArgs() {
		return this.args;
	}

	/** The target object; {@code null} on a proxy without a target. */
	public @Nullable Object getTarget() {
		return this.target;
	}

	public Class<?> getTargetClass() {
		return this.targetClass;
	}

}
