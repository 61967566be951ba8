package dev.holdfast.autoconfigure;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.NoSuchBeanDefinitionException;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.Environment;

import dev.holdfast.LockConfigurationException;

/**
 * One backend of {@code holdfast.backends.<name>} (NBK in docs/DESIGN.md): its settings, bound
 * from {@code holdfast.backends.<name>.<type>.*} into the same properties class as
 * {@code holdfast.<type>.*}, and the client bean it uses, for the factory method of its type's
 * configuration, the one that also builds the default backend.
 */
record NamedBackend(String name, BackendType type, HoldfastProperties.Backend spec, HoldfastProperties holdfast,
		ListableBeanFactory beanFactory, Binder binder) {

	static final String PREFIX = "holdfast.backends";

	private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9-]*");

	/** The named backends configured in {@code environment}, validated, in their order there. */
	static Map<String, HoldfastProperties.Backend> configured(Environment environment) {
		Binder binder = Binder.get(environment);
		Map<String, HoldfastProperties.Backend> backends = binder
			.bind(PREFIX, Bindable.mapOf(String.class, HoldfastProperties.Backend.class))
			.orElse(Map.of());
		backends.forEach((name, spec) -> {
			checkName(name, "holdfast.backends." + name);
			String prefix = PREFIX + "." + name;
			if ((spec.getType() == null) == (spec.getBean() == null)) {
				throw new LockConfigurationException(prefix + ((spec.getType() == null) ? ".type is not set"
						: ".type and " + prefix + ".bean are both set"), "Set either " + prefix + ".type to redis, "
								+ "redlock, jdbc, zookeeper or memory, or " + prefix + ".bean to your LockBackend bean.");
			}
			if (spec.getClient() != null && (spec.getType() == BackendType.MEMORY
					|| spec.getType() == BackendType.REDLOCK)) {
				throw new LockConfigurationException(prefix + ".client is set, but a " + typeName(spec) + " backend uses"
						+ " no client bean", "Remove " + prefix + ".client"
								+ ((spec.getType() == BackendType.REDLOCK) ? "; set " + prefix + ".redlock.nodes." : "."));
			}
			if (spec.getClient() != null && spec.getType() == BackendType.ZOOKEEPER
					&& binder.bind(prefix + ".zookeeper.connect-string", String.class).isBound()) {
				throw new LockConfigurationException(prefix + ".client and " + prefix + ".zookeeper.connect-string are "
						+ "both set", "Keep one: client for your CuratorFramework bean, or connect-string for a client of "
								+ "its own.");
			}
			if (spec.getBean() != null && spec.getClient() != null) {
				throw new LockConfigurationException(prefix + ".client is set beside " + prefix + ".bean, whose "
						+ "LockBackend bean has its own client", "Remove " + prefix + ".client.");
			}
		});
		return backends;
	}

	/**
	 * Fails unless {@code name} can name a backend: lower-case letters, digits and '-', neither
	 * {@code default} nor a backend type, which name the default backend in meters.
	 * @param where where the name is given, for the message
	 */
	static void checkName(String name, String where) {
		boolean reserved = name.equals("default") || Arrays.stream(BackendType.values())
			.anyMatch((type) -> type.name().equalsIgnoreCase(name));
		if (!NAME.matcher(name).matches() || reserved) {
			throw new LockConfigurationException(where + " is not a valid backend name"
					+ (reserved ? ": 'default' and the backend types name the default backend in meters" : ""),
					"Name the backend after its use with lower-case letters, digits and '-', such as 'jobs'.");
		}
	}

	/** {@code holdfast.backends.<name>}, the prefix of this backend's properties. */
	String prefix() {
		return PREFIX + "." + this.name;
	}

	/** This backend's {@code <type>} settings, as {@code holdfast.<type>.*} binds them. */
	<T> T settings(Class<T> type) {
		return this.binder.bindOrCreate(prefix() + "." + typeName(), type);
	}

	String typeName() {
		return this.type.name().toLowerCase(Locale.ROOT);
	}

	/** {@code redis}, {@code jdbc}, ...: the type of {@code spec} as its property reads. */
	static String typeName(HoldfastProperties.Backend spec) {
		return String.valueOf(spec.getType()).toLowerCase(Locale.ROOT);
	}

	/** The prefix of this backend's keys ({@link #keyPrefix(String, HoldfastProperties.Backend, HoldfastProperties)}). */
	String keyPrefix() {
		return keyPrefix(this.name, this.spec, this.holdfast);
	}

	/** The prefix of backend {@code name}'s keys: its own, else {@code holdfast.key-prefix} and {@code <name>::}. */
	static String keyPrefix(String name, HoldfastProperties.Backend spec, HoldfastProperties holdfast) {
		String own = spec.getKeyPrefix();
		return (own != null) ? own : holdfast.getKeyPrefix() + name + "::";
	}

	/** The name of the client bean this backend uses, if one is named. */
	@Nullable String clientName() {
		return this.spec.getClient();
	}

	/**
	 * The client bean this backend uses: the one {@code client} names, else the application's
	 * only or primary one; {@code null} if there is none of its type.
	 */
	<T> @Nullable T clientIfAny(Class<T> type) {
		String named = this.spec.getClient();
		if (named != null) {
			try {
				return this.beanFactory.getBean(named, type);
			}
			catch (NoSuchBeanDefinitionException ex) {
				throw new LockConfigurationException(prefix() + ".client is '" + named + "', but there is no "
						+ type.getSimpleName() + " bean of that name",
						"Set " + prefix() + ".client to one of " + beanNames(type) + ".");
			}
		}
		T unique = this.beanFactory.getBeanProvider(type).getIfUnique();
		List<String> found = beanNames(type);
		if (unique == null && !found.isEmpty()) {
			throw new LockConfigurationException(prefix() + " found " + found.size() + " " + type.getSimpleName()
					+ " beans and cannot tell which one keeps its locks",
					"Set " + prefix() + ".client to one of " + found + ".");
		}
		return unique;
	}

	/** As {@link #clientIfAny}, failing when there is none. */
	<T> T client(Class<T> type) {
		T client = clientIfAny(type);
		if (client == null) {
			throw new LockConfigurationException(prefix() + ".type=" + typeName() + " is set, but there is no "
					+ type.getSimpleName() + " bean for it", "Define a " + type.getSimpleName() + " bean, or choose "
							+ "another " + prefix() + ".type.");
		}
		return client;
	}

	private List<String> beanNames(Class<?> type) {
		return Arrays.asList(this.beanFactory.getBeanNamesForType(type));
	}

	/**
	 * {@code failure} of the shared factory method, with the properties it names read as this
	 * backend's ({@code holdfast.redis.channel} becomes {@code holdfast.backends.<name>.redis.channel}).
	 */
	LockConfigurationException named(LockConfigurationException failure) {
		String shared = "holdfast." + typeName() + ".";
		String own = prefix() + "." + typeName() + ".";
		return new LockConfigurationException(
				"Backend '" + this.name + "': " + String.valueOf(failure.getMessage()).replace(shared, own)
					.replace("holdfast.backend=", prefix() + ".type="),
				failure.getAction()
					.replace(LockBackendStartup.settingsOf(typeName(), null), LockBackendStartup.settingsOf(typeName(),
							this.name))
					.replace(shared, own)
					.replace("holdfast.backend ", prefix() + ".type "));
	}

}
