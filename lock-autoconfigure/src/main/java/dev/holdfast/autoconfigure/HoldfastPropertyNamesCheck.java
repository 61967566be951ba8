package dev.holdfast.autoconfigure;

import java.beans.PropertyDescriptor;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.BeanUtils;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.context.properties.bind.DataObjectPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationProperty;
import org.springframework.boot.context.properties.source.ConfigurationPropertyName;
import org.springframework.boot.context.properties.source.ConfigurationPropertySource;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.context.properties.source.IterableConfigurationPropertySource;
import org.springframework.core.env.Environment;
import org.springframework.core.env.SystemEnvironmentPropertySource;
import org.springframework.util.ClassUtils;

import dev.holdfast.LockConfigurationException;

/**
 * Fails the application at startup when its configuration sets a {@code holdfast.*} property that
 * Holdfast does not have: Spring Boot ignores unknown names, so a typo such as
 * {@code holdfast.lease-tme} or {@code holdfast.redis.replicas-to-ak} would leave the setting it was
 * meant for at its default without a word. Holdfast's names are the properties of its
 * {@code @ConfigurationProperties} classes (what the configuration metadata is generated from);
 * relaxed spellings ({@code leaseTime}) and list or map entries of a known property are known.
 * Environment variables are not checked: their mapping to property names is ambiguous
 * ({@code HOLDFAST_LEASE_TIME} may mean {@code holdfast.lease.time}). A post-processor of the bean
 * factory, so that it runs before any bean a misspelled property was meant for. With
 * {@code holdfast.fail-on-unknown-properties=false} (configuration shared by applications on
 * different Holdfast versions) the same message is a WARN.
 */
final class HoldfastPropertyNamesCheck implements BeanFactoryPostProcessor {

	private static final Log logger = LogFactory.getLog(HoldfastPropertyNamesCheck.class);

	private static final ConfigurationPropertyName HOLDFAST = ConfigurationPropertyName.of("holdfast");

	private static final ConfigurationPropertyName BACKENDS = ConfigurationPropertyName.of("holdfast.backends");

	/** The properties of a named backend itself ({@link HoldfastProperties.Backend}). */
	private static final List<String> BACKEND_OWN = List.of("type", "bean", "client", "key-prefix");

	/** The types whose settings a named backend has under {@code holdfast.backends.<name>.<type>}. */
	private static final List<String> BACKEND_SETTINGS = List.of("redis", "redlock", "zookeeper", "jdbc");

	/** Whether unknown names fail the start ({@link HoldfastProperties#isFailOnUnknownProperties()}). */
	private static final String FAIL_PROPERTY = "holdfast.fail-on-unknown-properties";


	private final Environment environment;

	HoldfastPropertyNamesCheck(Environment environment) {
		this.environment = environment;
	}

	@Override
	public void postProcessBeanFactory(ConfigurableListableBeanFactory beanFactory) {
		List<KnownName> known = knownNames();
		Map<String, String> types = new TreeMap<>();
		NamedBackend.configured(this.environment).forEach((backend, spec) -> types.put(backend,
				NamedBackend.typeName(spec)));
		Map<String, String> unknown = new TreeMap<>();
		for (ConfigurationPropertySource source : ConfigurationPropertySources.get(this.environment)) {
			if (!(source instanceof IterableConfigurationPropertySource names)
					|| source.getUnderlyingSource() instanceof SystemEnvironmentPropertySource) {
				continue;
			}
			names.stream()
				.filter(HOLDFAST::isAncestorOf)
				.filter((name) -> !isKnown(name, known, types))
				.forEach((name) -> unknown.putIfAbsent(name.toString(), origin(source, name)));
		}
		if (!unknown.isEmpty()) {
			LockConfigurationException failure = failure(unknown, known);
			if (this.environment.getProperty(FAIL_PROPERTY, Boolean.class, true)) {
				throw failure;
			}
			logger.warn(failure.getMessage() + " " + failure.getAction());
		}
	}

	/**
	 * Whether {@code name} is a known property (in any relaxed spelling), an entry of one (a list
	 * element or map key), or a group (a YAML section left empty).
	 */
	private static boolean isKnown(ConfigurationPropertyName name, List<KnownName> known, Map<String, String> types) {
		if (BACKENDS.isAncestorOf(name) && name.getNumberOfElements() > 3) {
			// holdfast.backends.<name>.<rest>: its own (type, bean, client, key-prefix), or <type>.* as
			// holdfast.<type>.* for its own type only
			ConfigurationPropertyName rest = name.subName(3);
			String type = rest.getElement(0, ConfigurationPropertyName.Form.DASHED);
			return (rest.getNumberOfElements() == 1) ? BACKEND_OWN.contains(rest.toString())
					: BACKEND_SETTINGS.contains(type)
							&& type.equals(types.get(name.getElement(2, ConfigurationPropertyName.Form.DASHED)))
							&& isKnown(HOLDFAST.append(rest), known, types);
		}
		return known.stream().anyMatch((k) -> k.name().equals(name) || (!k.group() && k.name().isAncestorOf(name)));
	}

	private static String origin(ConfigurationPropertySource source, ConfigurationPropertyName name) {
		ConfigurationProperty property = source.getConfigurationProperty(name);
		if (property != null && property.getOrigin() != null) {
			return String.valueOf(property.getOrigin());
		}
		Object underlying = source.getUnderlyingSource();
		return (underlying instanceof org.springframework.core.env.PropertySource<?> named) ? named.getName()
				: String.valueOf(underlying);
	}

	private static LockConfigurationException failure(Map<String, String> unknown,
			List<KnownName> known) {
		StringBuilder description = new StringBuilder("Holdfast has no propert")
			.append((unknown.size() == 1) ? "y " : "ies ");
		StringBuilder action = new StringBuilder();
		unknown.forEach((name, origin) -> {
			if (description.charAt(description.length() - 1) != ' ') {
				description.append(", ");
			}
			description.append('\'').append(name).append("' (").append(origin).append(')');
			String nearest = nearest(name, known);
			action.append((action.length() == 0) ? "" : " ")
				.append((nearest != null) ? "Correct '" + name + "' to '" + nearest + "', or remove it."
						: "Remove '" + name + "'.");
		});
		description.append(": unknown names are ignored, so the setting meant keeps its default.");
		action.append(" Holdfast's properties are listed in the README's configuration section and in the IDE's"
				+ " completion of holdfast.*; holdfast.fail-on-unknown-properties=false logs them at WARN instead"
				+ " (for configuration shared with other versions).");
		return new LockConfigurationException(description.toString(), action.toString());
	}

	/** The known name closest to {@code name} by edit distance, if it is close enough to be a typo. */
	private static @Nullable String nearest(String name, List<KnownName> known) {
		String best = null;
		int bestDistance = Integer.MAX_VALUE;
		for (KnownName candidate : known) {
			if (candidate.group()) {
				continue;
			}
			String text = candidate.name().toString();
			int distance = distance(name, text);
			if (distance < bestDistance) {
				best = text;
				bestDistance = distance;
			}
		}
		return (best != null && bestDistance <= Math.max(2, best.length() / 4)) ? best : null;
	}

	private static int distance(String a, String b) {
		int[] previous = new int[b.length() + 1];
		int[] current = new int[b.length() + 1];
		for (int j = 0; j <= b.length(); j++) {
			previous[j] = j;
		}
		for (int i = 1; i <= a.length(); i++) {
			current[0] = i;
			for (int j = 1; j <= b.length(); j++) {
				int substitution = previous[j - 1] + ((a.charAt(i - 1) == b.charAt(j - 1)) ? 0 : 1);
				current[j] = Math.min(substitution, Math.min(previous[j], current[j - 1]) + 1);
			}
			int[] swap = previous;
			previous = current;
			current = swap;
		}
		return previous[b.length()];
	}

	/**
	 * Every {@code holdfast.*} property and group: the properties of Holdfast's
	 * {@code @ConfigurationProperties} classes, read as Spring Boot binds them (JavaBean
	 * properties, nested groups of Holdfast's own classes), which is also what the configuration
	 * metadata is generated from.
	 */
	static List<KnownName> knownNames() {
		List<KnownName> names = new ArrayList<>();
		addNames(names, "holdfast", HoldfastProperties.class);
		addNames(names, "holdfast.redis", HoldfastRedisProperties.class);
		addNames(names, "holdfast.redlock", HoldfastRedlockProperties.class);
		addNames(names, "holdfast.scheduling", HoldfastSchedulingProperties.class);
		addNames(names, "holdfast.zookeeper", HoldfastZooKeeperProperties.class);
		try {
			// extends a class of spring-boot-jdbc, which a Redis or ZooKeeper application may lack
			addNames(names, "holdfast.jdbc", ClassUtils.forName(HoldfastProperties.class.getPackageName()
					+ ".HoldfastJdbcProperties", HoldfastPropertyNamesCheck.class.getClassLoader()));
		}
		catch (ClassNotFoundException | LinkageError ex) {
			// its names cannot be read: accept every holdfast.jdbc.* name rather than guess
			names.add(new KnownName(ConfigurationPropertyName.of("holdfast.jdbc"), false));
		}
		return names;
	}

	private static void addNames(List<KnownName> names, String prefix, Class<?> type) {
		names.add(new KnownName(ConfigurationPropertyName.of(prefix), true));
		for (PropertyDescriptor property : BeanUtils.getPropertyDescriptors(type)) {
			if (property.getReadMethod() == null || property.getName().equals("class")) {
				continue;
			}
			String name = prefix + "." + DataObjectPropertyName.toDashedForm(property.getName());
			Class<?> valueType = property.getPropertyType();
			if (valueType != null && !valueType.isEnum()
					&& valueType.getName().startsWith(HoldfastProperties.class.getPackageName() + ".")) {
				addNames(names, name, valueType);
			}
			else {
				names.add(new KnownName(ConfigurationPropertyName.of(name), false));
			}
		}
	}

	/** A known name: a property, or a group of properties. */
	record KnownName(ConfigurationPropertyName name, boolean group) {
	}

}
