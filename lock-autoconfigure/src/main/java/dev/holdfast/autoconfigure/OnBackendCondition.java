package dev.holdfast.autoconfigure;

import java.util.Locale;
import java.util.Map;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.condition.ConditionMessage;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.ConfigurationCondition;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.util.ClassUtils;

import dev.holdfast.spi.LockBackend;

/**
 * The condition of {@link ConditionalOnBackend}; explains its choice in the condition report
 * ({@code --debug}).
 */
class OnBackendCondition extends SpringBootCondition implements ConfigurationCondition {

	static final String PROPERTY = "holdfast.backend";

	private static final String REDIS_FACTORY = "org.springframework.data.redis.connection.RedisConnectionFactory";

	private static final String DATA_SOURCE = "javax.sql.DataSource";

	private static final String CURATOR = "org.apache.curator.framework.CuratorFramework";

	@Override
	public ConfigurationPhase getConfigurationPhase() {
		return ConfigurationPhase.REGISTER_BEAN;
	}

	@Override
	public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
		Map<String, @Nullable Object> attributes = metadata.getAnnotationAttributes(ConditionalOnBackend.class.getName());
		BackendType wanted = (BackendType) attributes.get("value");
		ConditionMessage.Builder message = ConditionMessage.forCondition(ConditionalOnBackend.class, wanted);
		String configured = context.getEnvironment().getProperty(PROPERTY);
		if (configured != null && !configured.isBlank()) {
			String normalized = configured.trim().replace('-', '_').toUpperCase(Locale.ROOT);
			if (normalized.equals(wanted.name())) {
				return ConditionOutcome.match(message.foundExactly(PROPERTY + "=" + configured));
			}
			return ConditionOutcome.noMatch(message.found(PROPERTY).items(configured));
		}
		Detection detected = detect(context);
		if (detected.type == wanted) {
			return ConditionOutcome.match(message.because(PROPERTY + " is unset and " + detected.reason));
		}
		return ConditionOutcome
			.noMatch(message.because(PROPERTY + " is unset and auto-detection picked " + detected.type.name().toLowerCase(Locale.ROOT)
					+ " (" + detected.reason + ")"));
	}

	static Detection detect(ConditionContext context) {
		return detect(context.getEnvironment(), context.getBeanFactory(), context.getClassLoader());
	}

	/**
	 * Why the backend in use was chosen: the application's own {@code LockBackend} bean, or, for
	 * one that a configuration of Holdfast's made, as the condition report says it: the property,
	 * or what auto-detection found.
	 */
	static String choice(Environment environment, ConfigurableListableBeanFactory beanFactory) {
		String[] backends = beanFactory.getBeanNamesForType(LockBackend.class, false, false);
		if (backends.length == 1 && !madeByHoldfast(beanFactory, backends[0])) {
			return "the application defines the LockBackend bean '" + backends[0] + "'";
		}
		String configured = environment.getProperty(PROPERTY);
		if (configured != null && !configured.isBlank()) {
			return PROPERTY + "=" + configured.trim();
		}
		return PROPERTY + " is unset and " + detect(environment, beanFactory, beanFactory.getBeanClassLoader()).reason;
	}

	/**
	 * Whether the bean {@code name} comes from a {@code @Bean} method of a configuration class
	 * conditional on a backend (or nested in one): Holdfast's, whatever the bean's name.
	 */
	private static boolean madeByHoldfast(ConfigurableListableBeanFactory beanFactory, String name) {
		String factory = beanFactory.containsBeanDefinition(name)
				? beanFactory.getBeanDefinition(name).getFactoryBeanName() : null;
		Class<?> type = (factory != null) ? beanFactory.getType(factory, false) : null;
		for (Class<?> candidate = type; candidate != null; candidate = candidate.getEnclosingClass()) {
			if (ClassUtils.getUserClass(candidate).isAnnotationPresent(ConditionalOnBackend.class)) {
				return true;
			}
		}
		return false;
	}

	private static Detection detect(Environment environment, @Nullable ConfigurableListableBeanFactory beanFactory,
			@Nullable ClassLoader classLoader) {
		if (environment.containsProperty("holdfast.redlock.nodes[0]")
				|| environment.containsProperty("holdfast.redlock.nodes")) {
			return new Detection(BackendType.REDLOCK, "holdfast.redlock.nodes is set");
		}
		if (environment.containsProperty("holdfast.zookeeper.connect-string")) {
			return new Detection(BackendType.ZOOKEEPER, "holdfast.zookeeper.connect-string is set");
		}
		if (beanFactory != null && hasBean(beanFactory, CURATOR, classLoader)) {
			return new Detection(BackendType.ZOOKEEPER, "a CuratorFramework bean exists");
		}
		if (beanFactory != null && hasBean(beanFactory, REDIS_FACTORY, classLoader)) {
			return new Detection(BackendType.REDIS, "a RedisConnectionFactory bean exists");
		}
		if (beanFactory != null && hasBean(beanFactory, DATA_SOURCE, classLoader)) {
			return new Detection(BackendType.JDBC, "a DataSource bean exists");
		}
		return new Detection(BackendType.MEMORY, "no Redlock nodes, ZooKeeper connect string, CuratorFramework, "
				+ "RedisConnectionFactory or DataSource was found");
	}

	private static boolean hasBean(ConfigurableListableBeanFactory beanFactory, String typeName,
			@Nullable ClassLoader classLoader) {
		if (!ClassUtils.isPresent(typeName, classLoader)) {
			return false;
		}
		Class<?> type = ClassUtils.resolveClassName(typeName, classLoader);
		return beanFactory.getBeanNamesForType(type, true, false).length > 0;
	}

	record Detection(BackendType type, String reason) {
	}

}
