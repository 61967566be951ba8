package dev.holdfast.core;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.lang.reflect.RecordComponent;
import java.util.Collection;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

import org.jspecify.annotations.Nullable;

import org.springframework.aop.TargetClassAware;
import org.springframework.aop.support.AopUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

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
 * pass. Arrays, collections, maps and records render their elements (a record its components,
 * read through its accessors), which are judged one by one.
 */
public final class IdentityStrings {

	private static final ClassValue<Boolean> INHERITS_OBJECT_TO_STRING = new ClassValue<>() {

		@Override
		protected Boolean computeValue(Class<?> type) {
			return inheritsObjectToString(type);
		}

	};

	private static final ClassValue<Method[]> RECORD_ACCESSORS = new ClassValue<>() {

		@Override
		protected Method[] computeValue(Class<?> type) {
			RecordComponent[] components = type.getRecordComponents();
			Method[] accessors = new Method[components.length];
			for (int i = 0; i < components.length; i++) {
				accessors[i] = components[i].getAccessor();
				// the application's records need not be public, and Holdfast calls from another package
				accessors[i].trySetAccessible();
			}
			return accessors;
		}

	};

	private IdentityStrings() {
	}

	/**
	 * The first value within {@code key} (itself, an element of an array, collection or map, a
	 * component of a record, recursively) that renders as an identity string, or {@code null} if
	 * none does.
	 * @throws IllegalArgumentException if a record's components cannot be read
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
		else if (key instanceof Record record && rendersItsComponents(record)) {
			// a record's generated toString() renders its components, so they are what is judged
			for (Object component : components(record)) {
				Object found = findIdentityValue(component);
				if (found != null) {
					return found;
				}
			}
			return null;
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

	/**
	 * Where a declared parameter type is known to render an identity string whatever the
	 * argument: the type itself ({@code path} empty), an array of such a type, or a record with a
	 * component of such a type, directly or in a nested record or an array (the component's path,
	 * such as {@code customer} or {@code order.customer}). {@code null} when nothing is known
	 * before the call: see {@link #declaredTypeInheritsObjectToString}.
	 */
	public static @Nullable DeclaredIdentity findDeclaredIdentity(Class<?> type) {
		return findDeclaredIdentity(type, "", new HashSet<>());
	}

	private static @Nullable DeclaredIdentity findDeclaredIdentity(Class<?> type, String path, Set<Class<?>> seen) {
		Class<?> element = type;
		while (element.isArray()) {
			element = element.getComponentType();
		}
		if (element.isRecord() && COMPILED_TO_STRING.get(element)) {
			if (!seen.add(element)) {
				return null; // a record type that holds itself: judged once
			}
			for (RecordComponent component : element.getRecordComponents()) {
				String componentPath = path.isEmpty() ? component.getName() : path + "." + component.getName();
				DeclaredIdentity found = findDeclaredIdentity(component.getType(), componentPath, seen);
				if (found != null) {
					return found;
				}
			}
			return null;
		}
		return declaredTypeInheritsObjectToString(element) ? new DeclaredIdentity(path, element) : null;
	}

	/**
	 * Whether a record renders as its components, so that they are what Holdfast renders and
	 * judges: its {@code toString()} gives the form the compiler generates
	 * ({@code Order[id=7, customer=...]}). A record that declares a {@code toString()} of its own
	 * renders that, as any other class does: a key written as that text elsewhere must meet it.
	 */
	static boolean rendersItsComponents(Record record) {
		if (!COMPILED_TO_STRING.get(record.getClass())) {
			return false;
		}
		// final, as javac generates it, but a record may declare a final toString() of its own
		String[] names = componentNames(record.getClass());
		@Nullable Object[] values = components(record);
		StringBuilder generated = new StringBuilder(record.getClass().getSimpleName()).append('[');
		for (int i = 0; i < values.length; i++) {
			generated.append((i > 0) ? ", " : "").append(names[i]).append('=').append(values[i]);
		}
		return record.toString().contentEquals(generated.append(']'));
	}

	/**
	 * Whether a record class's {@code toString()} may be the compiler's: javac generates it
	 * {@code final}; one the record declares itself is rarely final.
	 */
	private static final ClassValue<Boolean> COMPILED_TO_STRING = new ClassValue<>() {

		@Override
		protected Boolean computeValue(Class<?> type) {
			try {
				return Modifier.isFinal(type.getDeclaredMethod("toString").getModifiers());
			}
			catch (NoSuchMethodException ex) {
				return true;
			}
		}

	};

	/** The names of a record class's components, in declaration order (its accessors' names). */
	static String[] componentNames(Class<? extends Record> type) {
		Method[] accessors = RECORD_ACCESSORS.get(type);
		String[] names = new String[accessors.length];
		for (int i = 0; i < accessors.length; i++) {
			names[i] = accessors[i].getName();
		}
		return names;
	}

	/**
	 * The values of a record's components, in declaration order, read through its accessors.
	 * @throws IllegalArgumentException if an accessor cannot be called (a record in a module
	 * package that is not open to Holdfast)
	 */
	static @Nullable Object[] components(Record record) {
		Method[] accessors = RECORD_ACCESSORS.get(record.getClass());
		@Nullable Object[] values = new Object[accessors.length];
		for (int i = 0; i < accessors.length; i++) {
			try {
				values[i] = accessors[i].invoke(record);
			}
			catch (IllegalAccessException ex) {
				throw new IllegalArgumentException("A lock key renders the components of record "
						+ record.getClass().getName() + ", but " + accessors[i].getName()
						+ "() cannot be called from Holdfast: open its package to dev.holdfast, or key on "
						+ "values read from the record", ex);
			}
			catch (InvocationTargetException ex) {
				ReflectionUtils.rethrowRuntimeException(ex.getTargetException());
			}
		}
		return values;
	}

	/**
	 * A declared type that renders an identity string whatever the argument.
	 * @param path the record component that holds it ({@code order.customer}), empty when it
	 * is the declared type itself or its element type
	 * @param type the class whose {@code toString()} is {@link Object}'s
	 */
	public record DeclaredIdentity(String path, Class<?> type) {
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
