package dev.holdfast.core;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.util.Collection;
import java.util.Map;

import org.jspecify.annotations.Nullable;

import org.springframework.aop.TargetClassAware;
import org.springframework.aop.support.AopUtils;
import org.springframework.util.ClassUtils;

/**
 * Tells which key values render as an identity string ({@code com.example.Order@3d4eac69}):
 * objects whose class inherits {@link Object#toString()}, lambdas among them. Such a key differs
 * per instance and per JVM, so a lock on it excludes nothing: {@link LockKeys} refuses it, and
 * the {@code @DistributedLock} interceptor refuses it first with the method and expression named.
 * <p>
 * The answer is cached per class ({@link ClassValue}: one entry per class the application
 * passes as a key, dropped with its class loader); a call pays a map lookup. Generated
 * subclasses (Spring's CGLIB proxies, Hibernate's lazy-loading proxies) render their target's
 * string, so the class they were generated from is judged, and a Spring JDK proxy is judged by its
 * target class. Other JDK proxies render what their handler returns, which cannot be known: they
 * pass. Arrays, collections and maps render their elements, which are judged one by one.
 */
public final class IdentityStrings {

	private static final ClassValue<Boolean> INHERITS_OBJECT_TO_STRING = new ClassValue<>() {

		@Override
		protected Boolean computeValue(Class<?> type) {
			return inheritsObjectToString(type);
		}

	};

	private IdentityStrings() {
	}

	/**
	 * The first value within {@code key} (itself, an element of an array, collection or map,
	 * recursively) that renders as an identity string, or {@code null} if none does.
	 */
	public static @Nullable Object findIdentityValue(@Nullable Object key) {
		if (key == null || key instanceof CharSequence || key instanceof Number || key instanceof Enum<?>) {
			return null;
		}
		Class<?> type = key.getClass();
		if (type.isArray()) {
			if (key instanceof Object[] array) {
				for (Object element : array) {
					Object found = findIdentityValue(element);
					if (found != null) {
						return found;
					}
				}
			}
			return null;
		}
		if (key instanceof Collection<?> collection) {
			for (Object element : collection) {
				Object found = findIdentityValue(element);
				if (found != null) {
					return found;
				}
			}
		}
		else if (key instanceof Map<?, ?> map) {
			for (Map.Entry<?, ?> entry : map.entrySet()) {
				Object found = findIdentityValue(entry.getKey());
				if (found == null) {
					found = findIdentityValue(entry.getValue());
				}
				if (found != null) {
					return found;
				}
			}
		}
		if (Proxy.isProxyClass(type)) {
			// A Spring JDK proxy hands toString() to its target; another handler decides by itself.
			if (key instanceof TargetClassAware) {
				Class<?> target = AopUtils.getTargetClass(key);
				return (target != type && INHERITS_OBJECT_TO_STRING.get(target)) ? key : null;
			}
			return null;
		}
		return INHERITS_OBJECT_TO_STRING.get(type) ? key : null;
	}

	/**
	 * Whether a value of a concrete {@code type} renders as an identity string: its
	 * {@code toString()} is {@link Object}'s. For a generated subclass (a proxy), the class it was
	 * generated from decides.
	 */
	public static boolean inheritsObjectToString(Class<?> type) {
		Class<?> judged = userClass(type);
		if (judged.isArray() || judged.isPrimitive() || judged.isInterface()) {
			return false;
		}
		try {
			Method toString = judged.getMethod("toString");
			return toString.getDeclaringClass() == Object.class;
		}
		catch (NoSuchMethodException ex) {
			return false;
		}
	}

	/**
	 * Whether a declared parameter type is known to render as an identity string whatever the
	 * argument: a concrete class that inherits {@link Object#toString()}. {@code Object},
	 * interfaces and abstract classes are decided at the call, by the argument's class.
	 */
	public static boolean declaredTypeInheritsObjectToString(Class<?> type) {
		if (type.isArray()) {
			return declaredTypeInheritsObjectToString(type.getComponentType());
		}
		if (type == Object.class || type.isInterface() || Modifier.isAbstract(type.getModifiers())) {
			return false;
		}
		return inheritsObjectToString(type);
	}

	/** The class a generated proxy subclass was made from; {@code type} itself otherwise. */
	private static Class<?> userClass(Class<?> type) {
		Class<?> current = type;
		while (current.getSuperclass() != null && current.getSuperclass() != Object.class
				&& (ClassUtils.getUserClass(current) != current || current.getName().contains("$HibernateProxy$"))) {
			current = current.getSuperclass();
		}
		return current;
	}

}
