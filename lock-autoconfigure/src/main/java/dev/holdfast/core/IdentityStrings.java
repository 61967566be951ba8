package dev.holdfast.core;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.lang.reflect.RecordComponent;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.stream.Collectors;

import kotlin.jvm.JvmClassMappingKt;
import kotlin.reflect.KClass;
import kotlin.reflect.KFunction;
import kotlin.reflect.KParameter;
import kotlin.reflect.KProperty1;
import kotlin.reflect.full.KClasses;
import kotlin.reflect.jvm.KCallablesJvm;
import org.jspecify.annotations.Nullable;

import org.springframework.aop.TargetClassAware;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.KotlinDetector;
import org.springframework.util.ClassUtils;
import org.springframework.util.ObjectUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Renders key values, and tells which render as an identity string ({@code com.example.Order@3d4eac69}).
 * The rules are KEY-2 to KEY-4 in docs/DESIGN.md: equal values render alike in every JVM ({@link Set}s
 * and {@link Map}s sorted by rendered text, records and Kotlin data classes with the generated
 * {@code toString()} component by component, arrays by content, all recursively); the text is not
 * injective (values that render alike share a lock: concurrency lost, never exclusion). Whether a
 * class renders an identity string is cached per class ({@link ClassValue}, dropped with its class
 * loader). Generated subclasses (CGLIB, Hibernate proxies) and Spring JDK proxies are judged by
 * their target class; other JDK proxies render what their handler returns, unknowable: they pass.
 */
public final class IdentityStrings {

	private static final ClassValue<Boolean> INHERITS_OBJECT_TO_STRING = new ClassValue<>() {

		/** For a generated subclass (a proxy), the class it was generated from decides. */
		@Override
		protected Boolean computeValue(Class<?> type) {
			Class<?> judged = userClass(type);
			if (judged.isArray() || judged.isPrimitive() || judged.isInterface()) {
				return false;
			}
			try {
				return judged.getMethod("toString").getDeclaringClass() == Object.class;
			}
			catch (NoSuchMethodException ex) {
				return false;
			}
		}

	};

	/** The components of classes whose generated {@code toString()} renders them; {@link #NONE} for others. */
	private static final ClassValue<ComponentForm> COMPONENT_FORMS = new ClassValue<>() {

		@Override
		protected ComponentForm computeValue(Class<?> type) {
			return ComponentForm.of(type);
		}

	};

	private static final ComponentForm NONE = new ComponentForm('[', ']', new String[0], new Class<?>[0], List.of());

	private IdentityStrings() {
	}

	/**
	 * The first value within {@code key} (itself, an element of an array, collection or map, a
	 * component of a record, recursively) that renders as an identity string, or {@code null} if
	 * none does.
	 * @throws IllegalArgumentException if a record's components cannot be read
	 */
	public static @Nullable Object findIdentityValue(@Nullable Object key) {
		try {
			render(key);
			return null;
		}
		catch (IdentityValue found) {
			return found.value;
		}
	}

	/**
	 * The text of a key value, the same for equal values in every JVM (see the class Javadoc).
	 * @throws IdentityValue at the first value within it that renders as an identity string
	 * @throws IllegalArgumentException if a record's components cannot be read
	 */
	static String render(@Nullable Object value) {
		if (value == null || value instanceof CharSequence || value instanceof Number || value instanceof Enum<?>) {
			return String.valueOf(value);
		}
		StringBuilder out = new StringBuilder();
		render(value, out);
		return out.toString();
	}

	private static void render(@Nullable Object value, StringBuilder out) {
		if (value == null || value instanceof CharSequence || value instanceof Number || value instanceof Enum<?>) {
			out.append(value);
		}
		else if (value instanceof Object[] array) {
			join(Arrays.asList(array), '{', '}', out);
		}
		else if (value.getClass().isArray()) {
			out.append(ObjectUtils.nullSafeToString(value));
		}
		else if (value instanceof Set<?> set) {
			out.append('[').append(String.join(", ", set.stream().map(IdentityStrings::render).sorted().toList()));
			out.append(']');
		}
		else if (value instanceof Collection<?> collection) {
			join(collection, '[', ']', out);
		}
		else if (value instanceof Map<?, ?> map) {
			// by key text, then value text: keys that render alike (1 and "1") must not leave the order to the map
			out.append('{').append(map.entrySet().stream()
				.map((entry) -> new String[] { render(entry.getKey()), render(entry.getValue()) })
				.sorted(Comparator.<String[], String>comparing((entry) -> entry[0]).thenComparing((entry) -> entry[1]))
				.map((entry) -> entry[0] + "=" + entry[1])
				.collect(Collectors.joining(", ")));
			out.append('}');
		}
		else {
			@Nullable Object[] components = generatedComponents(value);
			if (components != null) {
				// the generated toString()'s form, with each component rendered by these rules
				ComponentForm form = COMPONENT_FORMS.get(value.getClass());
				out.append(value.getClass().getSimpleName()).append(form.open());
				for (int i = 0; i < components.length; i++) {
					render(components[i], out.append((i > 0) ? ", " : "").append(form.names()[i]).append('='));
				}
				out.append(form.close());
			}
			else if (rendersIdentity(value)) {
				throw new IdentityValue(value);
			}
			else {
				out.append(value);
			}
		}
	}

	private static void join(Iterable<?> elements, char open, char close, StringBuilder out) {
		out.append(open);
		String separator = "";
		for (Object element : elements) {
			render(element, out.append(separator));
			separator = ", ";
		}
		out.append(close);
	}

	private static boolean rendersIdentity(Object value) {
		Class<?> type = value.getClass();
		if (Proxy.isProxyClass(type)) {
			// A Spring JDK proxy hands toString() to its target; another handler decides by itself.
			Class<?> target = (value instanceof TargetClassAware) ? AopUtils.getTargetClass(value) : type;
			return target != type && INHERITS_OBJECT_TO_STRING.get(target);
		}
		return INHERITS_OBJECT_TO_STRING.get(type);
	}

	/**
	 * Where a declared parameter type is known to render an identity string whatever the
	 * argument: the type itself ({@code path} empty), an array of such a type, or a record with a
	 * component of such a type, directly or in a nested record or an array (the component's path,
	 * such as {@code customer} or {@code order.customer}). {@code null} when nothing is known
	 * before the call ({@code Object}, interfaces and abstract classes are decided by the argument's class).
	 */
	public static @Nullable DeclaredIdentity findDeclaredIdentity(Class<?> type) {
		return findDeclaredIdentity(type, "", new HashSet<>());
	}

	private static @Nullable DeclaredIdentity findDeclaredIdentity(Class<?> type, String path, Set<Class<?>> seen) {
		Class<?> element = type;
		while (element.isArray()) {
			element = element.getComponentType();
		}
		ComponentForm form = COMPONENT_FORMS.get(element);
		if (form != NONE) {
			if (!seen.add(element)) {
				return null; // a type that holds itself: judged once
			}
			for (int i = 0; i < form.types().length; i++) {
				String componentPath = path.isEmpty() ? form.names()[i] : path + "." + form.names()[i];
				DeclaredIdentity found = findDeclaredIdentity(form.types()[i], componentPath, seen);
				if (found != null) {
					return found;
				}
			}
			return null;
		}
		// Object, interfaces and abstract classes are decided at the call, by the argument's class
		boolean decided = element != Object.class && !Modifier.isAbstract(element.getModifiers());
		return (decided && INHERITS_OBJECT_TO_STRING.get(element)) ? new DeclaredIdentity(path, element) : null;
	}

	/**
	 * The components of {@code value}, read once, when its {@code toString()} is the one its
	 * compiler generated from them ({@code Name[a=1, b=x]}, a data class's {@code Name(a=1, b=x)});
	 * {@code null} otherwise, also for a record or data class whose own {@code toString()} differs.
	 * @throws IllegalArgumentException if an accessor cannot be called (a class in a module
	 * package that is not open to Holdfast)
	 */
	private static @Nullable Object @Nullable [] generatedComponents(Object value) {
		ComponentForm form = COMPONENT_FORMS.get(value.getClass());
		if (form == NONE) {
			return null;
		}
		@Nullable Object[] values = form.readers().stream().map((reader) -> reader.apply(value)).toArray();
		StringBuilder generated = new StringBuilder(value.getClass().getSimpleName()).append(form.open());
		for (int i = 0; i < values.length; i++) {
			generated.append((i > 0) ? ", " : "").append(form.names()[i]).append('=');
			// kotlinc renders an array property by content, javac a record's array component by identity
			if (form.open() == '(' && values[i] != null && values[i].getClass().isArray()) {
				String deep = Arrays.deepToString(new Object[] { values[i] });
				generated.append(deep, 1, deep.length() - 1);
			}
			else {
				generated.append(values[i]);
			}
		}
		return value.toString().contentEquals(generated.append(form.close())) ? values : null;
	}

	/** Calls a record's accessor. */
	private static @Nullable Object read(Method accessor, Object value) {
		try {
			return accessor.invoke(value);
		}
		catch (IllegalAccessException ex) {
			throw new IllegalArgumentException("A lock key renders the components of " + value.getClass().getName()
					+ ", but " + accessor.getName() + "() cannot be called from Holdfast: open its package to "
					+ "dev.holdfast, or key on values read from it", ex);
		}
		catch (InvocationTargetException ex) {
			ReflectionUtils.rethrowRuntimeException(ex.getTargetException());
			return null;
		}
	}

	/**
	 * How a compiler renders a class from its components: between {@code open} and {@code close},
	 * {@code name=value} pairs.
	 */
	private record ComponentForm(char open, char close, String[] names, Class<?>[] types,
			List<Function<Object, @Nullable Object>> readers) {

		static ComponentForm of(Class<?> type) {
			if (type.isRecord()) {
				return ofRecord(type);
			}
			boolean dataClass = KotlinDetector.isKotlinType(type) && KotlinDetector.isKotlinReflectPresent();
			return dataClass ? KotlinDataClasses.form(type) : NONE;
		}

		/**
		 * javac generates a record's toString() final; one the record declares itself rarely is.
		 * kotlinc generates a {@code @JvmRecord} data class's toString() not final, in the data
		 * class form; which one it has is told at the call only.
		 */
		private static ComponentForm ofRecord(Class<?> type) {
			boolean kotlin = KotlinDetector.isKotlinType(type);
			try {
				if (!kotlin && !Modifier.isFinal(type.getDeclaredMethod("toString").getModifiers())) {
					return NONE;
				}
			}
			catch (NoSuchMethodException ex) {
				// javac always declares one; judged as generated, as before
			}
			RecordComponent[] components = type.getRecordComponents();
			String[] names = new String[components.length];
			Class<?>[] types = new Class<?>[components.length];
			List<Function<Object, @Nullable Object>> readers = new ArrayList<>();
			for (int i = 0; i < components.length; i++) {
				names[i] = components[i].getName();
				types[i] = components[i].getType();
				Method accessor = components[i].getAccessor();
				// the application's records need not be public, and Holdfast calls from another package
				accessor.trySetAccessible();
				readers.add((value) -> read(accessor, value));
			}
			// a Kotlin @JvmRecord data class is a record that renders as a data class
			return new ComponentForm(kotlin ? '(' : '[', kotlin ? ')' : ']', names, types, readers);
		}

	}

	/**
	 * A Kotlin data class: the properties of its primary constructor, read with kotlin-reflect,
	 * which Spring's Kotlin support requires (without it a data class is judged as any class
	 * declaring {@code toString()}). kotlin-reflect rather than {@code componentN()}: a value-class
	 * property's accessors are mangled ({@code component1-j0LDvg8}) and return the unboxed value,
	 * where {@code toString()} renders the boxed one. Only loaded with kotlin-reflect on the class
	 * path.
	 */
	private static final class KotlinDataClasses {

		static ComponentForm form(Class<?> type) {
			KClass<?> kotlinClass = JvmClassMappingKt.getKotlinClass(type);
			KFunction<?> primary = kotlinClass.isData() ? KClasses.getPrimaryConstructor(kotlinClass) : null;
			if (primary == null) {
				return NONE;
			}
			Map<String, KProperty1<?, ?>> properties = new HashMap<>();
			for (KProperty1<?, ?> property : KClasses.getMemberProperties(kotlinClass)) {
				properties.put(property.getName(), property);
			}
			List<KParameter> parameters = primary.getParameters();
			String[] names = new String[parameters.size()];
			Class<?>[] types = new Class<?>[parameters.size()];
			List<Function<Object, @Nullable Object>> readers = new ArrayList<>();
			for (int i = 0; i < names.length; i++) {
				@SuppressWarnings("unchecked")
				KProperty1<Object, ?> property = (KProperty1<Object, ?>) properties.get(parameters.get(i).getName());
				if (property == null) {
					return NONE;
				}
				KCallablesJvm.setAccessible(property, true);
				names[i] = property.getName();
				types[i] = (property.getReturnType().getClassifier() instanceof KClass<?> classifier)
						? JvmClassMappingKt.getJavaClass(classifier) : Object.class;
				readers.add(property::get);
			}
			return new ComponentForm('(', ')', names, types, readers);
		}

	}

	/**
	 * A declared type that renders an identity string whatever the argument.
	 * @param path the record component that holds it ({@code order.customer}), empty when it
	 * is the declared type itself or its element type
	 * @param type the class whose {@code toString()} is {@link Object}'s
	 */
	public record DeclaredIdentity(String path, Class<?> type) {
	}

	/** Thrown by {@link #render} at the first value that renders as an identity string. */
	static final class IdentityValue extends RuntimeException {

		final transient Object value;

		IdentityValue(Object value) {
			super(null, null, false, false);
			this.value = value;
		}

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
