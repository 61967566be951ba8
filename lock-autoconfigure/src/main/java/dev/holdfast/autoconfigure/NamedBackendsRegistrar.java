package dev.holdfast.autoconfigure;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.annotation.AnnotatedBeanDefinition;
import org.springframework.beans.factory.annotation.BeanFactoryAnnotationUtils;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.AbstractBeanDefinition;
import org.springframework.beans.factory.support.AutowireCandidateQualifier;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.BeanDefinitionRegistryPostProcessor;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.core.annotation.MergedAnnotation;
import org.springframework.core.env.Environment;
import org.springframework.core.type.MethodMetadata;
import org.springframework.util.ClassUtils;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockListener;
import dev.holdfast.core.CompositeLockListener;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.leader.DefaultLeaderElections;
import dev.holdfast.scan.BackendChoice;
import dev.holdfast.spi.LockBackend;

/**
 * Registers, for each backend of {@code holdfast.backends.<name>}, what the default backend has
 * (NBK in docs/DESIGN.md): its {@link LockBackend}, built by its type's configuration as the
 * default one is; its engine, a {@link DefaultLockTemplate} injectable with
 * {@code @Qualifier("<name>")}; its startup ({@link LockBackendStartup}) and graceful shutdown
 * ({@link GracefulLockShutdown}); its leader elections ({@link DefaultLeaderElections}, by the
 * same qualifier) and their lifecycle. Its beans are no default candidates: an injection point without
 * the qualifier gets the default backend's, as in an application without named backends.
 */
final class NamedBackendsRegistrar implements BeanDefinitionRegistryPostProcessor, ApplicationContextAware {

	private static final Log logger = LogFactory.getLog(NamedBackendsRegistrar.class);

	/** The bean name of the {@code LockBackend} of the backend named {@code <suffix>}. */
	static final String BACKEND_BEAN = "holdfastLockBackend.";

	/** The bean name of the {@code DefaultLockTemplate} of the backend named {@code <suffix>}. */
	static final String TEMPLATE_BEAN = "holdfastLockTemplate.";

	private final Environment environment;

	private ApplicationContext context;

	/** The names of the named backends, once the bean definitions were processed. */
	private volatile @Nullable Set<String> names;

	NamedBackendsRegistrar(Environment environment) {
		this.environment = environment;
	}

	@Override
	public void setApplicationContext(ApplicationContext context) {
		this.context = context;
	}

	/**
	 * The choice among the default backend, whose {@code T} {@code defaultOne} gives, and the named
	 * ones, whose {@code T} is their bean of that type with the qualifier of their name.
	 */
	static <T extends @Nullable Object> BackendChoice<T> choice(Environment environment, BeanFactory beanFactory,
			Class<T> type, Supplier<T> defaultOne) {
		return new BackendChoice<>(names(environment, beanFactory),
				(name) -> name.equals(BackendChoice.DEFAULT) ? defaultOne.get()
						: BeanFactoryAnnotationUtils.qualifiedBeanOfType(beanFactory, type, name));
	}

	/**
	 * The names of the named backends: configured ({@code holdfast.backends.<name>}) or the
	 * application's qualified {@code LockBackend} beans, as the registrar found them.
	 */
	static Set<String> names(Environment environment, BeanFactory beanFactory) {
		NamedBackendsRegistrar registrar = beanFactory.getBeanProvider(NamedBackendsRegistrar.class).getIfAvailable();
		Set<String> names = (registrar != null) ? registrar.names : null;
		return (names != null) ? names : NamedBackend.configured(environment).keySet();
	}

	/**
	 * The application's own named backends: {@code LockBackend} beans of {@code @Bean} methods
	 * with a {@code @Qualifier}, by qualifier, to their bean names.
	 * @throws LockConfigurationException for one that is a default candidate: it would replace the
	 * default backend
	 */
	static Map<String, String> applicationBackends(BeanDefinitionRegistry registry, @Nullable ClassLoader classLoader) {
		Map<String, String> found = new TreeMap<>();
		for (String beanName : registry.getBeanDefinitionNames()) {
			BeanDefinition definition = registry.getBeanDefinition(beanName);
			MethodMetadata method = (definition instanceof AnnotatedBeanDefinition annotated)
					? annotated.getFactoryMethodMetadata() : null;
			MergedAnnotation<Qualifier> qualifier = (method != null) ? method.getAnnotations().get(Qualifier.class)
					: MergedAnnotation.missing();
			if (method == null || !qualifier.isPresent() || !ClassUtils.isPresent(method.getReturnTypeName(), classLoader)
					|| !LockBackend.class.isAssignableFrom(ClassUtils.resolveClassName(method.getReturnTypeName(),
							classLoader))) {
				continue;
			}
			String name = qualifier.getString("value");
			NamedBackend.checkName(name, "The qualifier '" + name + "' of the LockBackend bean '" + beanName + "'");
			if (!(definition instanceof AbstractBeanDefinition abstractDefinition)
					|| abstractDefinition.isDefaultCandidate()) {
				throw new LockConfigurationException("The LockBackend bean '" + beanName + "' is qualified '" + name
						+ "' but is a default candidate, so it would also replace the default backend",
						"Declare it @Bean(defaultCandidate = false) to use it as the backend named '" + name + "'.");
			}
			found.put(name, beanName);
		}
		return found;
	}

	@Override
	public void postProcessBeanDefinitionRegistry(BeanDefinitionRegistry registry) {
		Map<String, HoldfastProperties.Backend> backends = NamedBackend.configured(this.environment);
		Map<String, String> own = applicationBackends(registry, getClass().getClassLoader());
		Set<String> names = new TreeSet<>(backends.keySet());
		names.addAll(own.keySet());
		this.names = Set.copyOf(names);
		if (names.isEmpty()) {
			return;
		}
		if (!(registry instanceof ConfigurableListableBeanFactory beanFactory)) {
			throw new IllegalStateException("Named backends need a ConfigurableListableBeanFactory, not " + registry);
		}
		own.forEach((name, beanName) -> {
			if (backends.containsKey(name)) {
				throw new LockConfigurationException("The backend '" + name + "' is both configured (holdfast.backends."
						+ name + ") and the application's LockBackend bean '" + beanName + "'",
						"Remove holdfast.backends." + name + ", or give the bean another qualifier.");
			}
			registerEngine(registry, beanFactory, name, new HoldfastProperties.Backend(), beanName,
					"backend '" + name + "': the application's LockBackend bean '" + beanName + "'");
		});
		backends.forEach((name, spec) -> {
			String backendBean = BACKEND_BEAN + name;
			RootBeanDefinition backend = new RootBeanDefinition(LockBackend.class,
					() -> backend(beanFactory, name, spec));
			backend.setDestroyMethodName(AbstractBeanDefinition.INFER_METHOD);
			backend.setDefaultCandidate(false);
			registry.registerBeanDefinition(backendBean, backend);
			registerEngine(registry, beanFactory, name, spec, backendBean, "backend '" + name + "': "
					+ NamedBackend.PREFIX + "." + name + ".type=" + NamedBackend.typeName(spec));
		});
		logSharedClients(backends);
	}

	/**
	 * Registers the engine of backend {@code name} on the bean {@code backendBean}, and what
	 * goes with it.
	 * @param choice what chose the backend, for the startup line
	 */
	private void registerEngine(BeanDefinitionRegistry registry, ConfigurableListableBeanFactory beanFactory,
			String name, HoldfastProperties.Backend spec, String backendBean, String choice) {
		String templateBean = TEMPLATE_BEAN + name;
		RootBeanDefinition template = new RootBeanDefinition(DefaultLockTemplate.class,
				() -> template(beanFactory, name, spec, beanFactory.getBean(backendBean, LockBackend.class)));
		template.setDependsOn(backendBean);
		template.setDestroyMethodName("close");
		template.setDefaultCandidate(false);
		template.addQualifier(new AutowireCandidateQualifier(Qualifier.class, name));
		registry.registerBeanDefinition(templateBean, template);

		String electionsBean = "holdfastLeaderElections." + name;
		RootBeanDefinition elections = new RootBeanDefinition(DefaultLeaderElections.class,
				() -> new DefaultLeaderElections(beanFactory.getBean(templateBean, DefaultLockTemplate.class),
						beanFactory.getBean(HoldfastProperties.class).getLeaseTime(), this.context::publishEvent));
		elections.setDependsOn(templateBean);
		elections.setDestroyMethodName("close");
		elections.setDefaultCandidate(false);
		elections.addQualifier(new AutowireCandidateQualifier(Qualifier.class, name));
		registry.registerBeanDefinition(electionsBean, elections);
		registerLifecycle(registry, "holdfastLeaderElectionLifecycle." + name, electionsBean,
				LeaderElectionLifecycle.class, () -> new LeaderElectionLifecycle(
						beanFactory.getBean(electionsBean, DefaultLeaderElections.class)));

		registerLifecycle(registry, "holdfastBackendStartup." + name, templateBean, LockBackendStartup.class,
				() -> new LockBackendStartup(beanFactory.getBean(templateBean, DefaultLockTemplate.class), choice,
						beanFactory.getBean(HoldfastProperties.class).isFailFast()));
		registerLifecycle(registry, "holdfastGracefulShutdown." + name, templateBean, GracefulLockShutdown.class,
				() -> new GracefulLockShutdown(beanFactory.getBean(templateBean, DefaultLockTemplate.class)));
	}

	private static <T> void registerLifecycle(BeanDefinitionRegistry registry, String beanName, String dependsOn,
			Class<T> type, Supplier<T> supplier) {
		RootBeanDefinition lifecycle = new RootBeanDefinition(type, supplier);
		lifecycle.setDependsOn(dependsOn);
		lifecycle.setDefaultCandidate(false);
		registry.registerBeanDefinition(beanName, lifecycle);
	}

	private LockBackend backend(ConfigurableListableBeanFactory beanFactory, String name,
			HoldfastProperties.Backend spec) {
		NamedBackend named = new NamedBackend(name, spec.getType(), spec,
				beanFactory.getBean(HoldfastProperties.class), beanFactory, Binder.get(this.environment));
		try {
			return switch (named.type()) {
				case REDIS -> {
					requireClass(named, "org.springframework.data.redis.connection.RedisConnectionFactory",
							"spring-boot-starter-data-redis");
					yield RedisBackendConfiguration.named(named);
				}
				case JDBC -> {
					requireClass(named, "org.springframework.boot.jdbc.init.DatabaseInitializationProperties",
							"spring-boot-starter-jdbc and your database's driver");
					yield JdbcBackendConfiguration.named(named);
				}
				case ZOOKEEPER -> {
					requireClass(named, "org.apache.curator.framework.CuratorFramework",
							"org.apache.curator:curator-framework");
					yield ZooKeeperBackendConfiguration.CuratorAvailable.named(named);
				}
				case REDLOCK -> {
					requireClass(named, "org.redisson.api.RedissonClient", "org.redisson:redisson");
					yield RedlockBackendConfiguration.RedissonAvailable.named(named);
				}
				case MEMORY -> MemoryBackendConfiguration.named();
			};
		}
		catch (LockConfigurationException ex) {
			throw named.named(ex);
		}
	}

	private DefaultLockTemplate template(ConfigurableListableBeanFactory beanFactory, String name,
			HoldfastProperties.Backend spec, LockBackend backend) {
		HoldfastProperties properties = beanFactory.getBean(HoldfastProperties.class);
		LockListener listeners = CompositeLockListener
			.of(beanFactory.getBeanProvider(LockListener.class).orderedStream().toList());
		return HoldfastAutoConfiguration.template(backend,
				HoldfastAutoConfiguration.settings(properties)
					.withKeyPrefix(NamedBackend.keyPrefix(name, spec, properties))
					.withInstanceName(InstanceNameDefault.resolve(properties, this.context, this.environment)),
				new NamedBackendListener(name, listeners));
	}

	private static void requireClass(NamedBackend named, String className, String library) {
		if (!ClassUtils.isPresent(className, NamedBackendsRegistrar.class.getClassLoader())) {
			throw new LockConfigurationException(named.prefix() + ".type=" + named.typeName()
					+ " is set, but its client library is not on the classpath",
					"Add " + library + " to the application's dependencies, or choose another " + named.prefix()
							+ ".type.");
		}
	}

	/**
	 * Says at INFO which backends of one type share a client bean (NBK-7): allowed, and their
	 * locks stay apart by their key prefixes.
	 */
	private void logSharedClients(Map<String, HoldfastProperties.Backend> backends) {
		Map<String, List<String>> byClient = new LinkedHashMap<>();
		backends.forEach((name, spec) -> {
			if (spec.getType() != BackendType.MEMORY && spec.getType() != BackendType.REDLOCK) {
				String client = (spec.getClient() != null) ? "'" + spec.getClient() + "'" : "(the application's)";
				byClient.computeIfAbsent(NamedBackend.typeName(spec) + " client " + client, (key) -> new ArrayList<>())
					.add(name);
			}
		});
		BackendType defaultType = Binder.get(this.environment).bind(OnBackendCondition.PROPERTY, BackendType.class)
			.orElse(null);
		List<String> sharingTheDefault = byClient.get(String.valueOf(defaultType).toLowerCase(Locale.ROOT)
				+ " client (the application's)");
		if (sharingTheDefault != null) {
			sharingTheDefault.add(0, "default");
		}
		byClient.forEach((client, names) -> {
			if (names.size() > 1) {
				logger.info("Holdfast backends " + names + " share the " + client + ": allowed; each keeps its "
						+ "locks under its own key prefix, so a lock name on two of them is two locks");
			}
		});
	}

}
