package dev.holdfast.autoconfigure;

import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.jspecify.annotations.Nullable;

import org.springframework.aot.AotDetector;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.BeanNotOfRequiredTypeException;
import org.springframework.beans.factory.annotation.BeanFactoryAnnotationUtils;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.beans.factory.support.AbstractBeanDefinition;
import org.springframework.beans.factory.support.AutowireCandidateQualifier;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.beans.factory.support.BeanDefinitionRegistryPostProcessor;
import org.springframework.beans.factory.support.RootBeanDefinition;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockListener;
import dev.holdfast.support.CompositeLockListener;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.leader.DefaultLeaderElections;
import dev.holdfast.scan.BackendChoice;
import dev.holdfast.spi.LockBackend;

/**
 * Registers, for each backend of {@code holdfast.backends.<name>}, what the default backend has
 * (NBK in docs/DESIGN.md): its {@link LockBackend}, built by its type's configuration as the
 * default one is, or the application's bean that {@code holdfast.backends.<name>.bean} names; its engine, a {@link DefaultLockTemplate} injectable with
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

	/** The names of the named backends ({@code holdfast.backends.<name>}), as the registrar found them. */
	static Set<String> names(Environment environment, BeanFactory beanFactory) {
		NamedBackendsRegistrar registrar = beanFactory.getBeanProvider(NamedBackendsRegistrar.class).getIfAvailable();
		Set<String> names = (registrar != null) ? registrar.names : null;
		return (names != null) ? names : NamedBackend.configured(environment).keySet();
	}

	@Override
	public void postProcessBeanDefinitionRegistry(BeanDefinitionRegistry registry) {
		Map<String, HoldfastProperties.Backend> backends = NamedBackend.configured(this.environment);
		this.names = Set.copyOf(backends.keySet());
		if (backends.isEmpty()) {
			return;
		}
		if (AotDetector.useGeneratedArtifacts()) {
			NamedBackendsAotCheck.check(backends.keySet());
		}
		if (!(registry instanceof ConfigurableListableBeanFactory beanFactory)) {
			throw new IllegalStateException("Named backends need a ConfigurableListableBeanFactory, not " + registry);
		}
		backends.forEach((name, spec) -> {
			String prefix = NamedBackend.PREFIX + "." + name;
			if (spec.getBean() != null) {
				checkApplicationBackend(registry, beanFactory, prefix, spec.getBean());
				registerEngine(registry, beanFactory, name, spec, spec.getBean(),
						"backend '" + name + "': the application's LockBackend bean (" + prefix + ".bean="
								+ spec.getBean() + ")");
				return;
			}
			String backendBean = BACKEND_BEAN + name;
			RootBeanDefinition backend = new RootBeanDefinition(LockBackend.class,
					() -> backend(beanFactory, name, spec));
			backend.setDestroyMethodName(AbstractBeanDefinition.INFER_METHOD);
			backend.setDefaultCandidate(false);
			backend.addQualifier(new AutowireCandidateQualifier(Qualifier.class, name));
			registry.registerBeanDefinition(backendBean, backend);
			registerEngine(registry, beanFactory, name, spec, backendBean,
					"backend '" + name + "': " + prefix + ".type=" + NamedBackend.typeName(spec));
		});
		checkSharedClients(backends, beanFactory);
	}

	/**
	 * Fails unless {@code beanName}, which {@code <prefix>.bean} names, is a bean that is no
	 * default candidate: one that is would also replace the default backend (BSL-2).
	 */
	private static void checkApplicationBackend(BeanDefinitionRegistry registry,
			ConfigurableListableBeanFactory beanFactory, String prefix, String beanName) {
		if (!registry.containsBeanDefinition(beanName)) {
			throw new LockConfigurationException(prefix + ".bean is '" + beanName + "', but there is no bean of that"
					+ " name", "Set " + prefix + ".bean to one of the LockBackend beans "
							+ List.of(beanFactory.getBeanNamesForType(LockBackend.class, true, false)) + ".");
		}
		if (!(registry.getBeanDefinition(beanName) instanceof AbstractBeanDefinition definition)
				|| definition.isDefaultCandidate()) {
			throw new LockConfigurationException("The LockBackend bean '" + beanName + "' (" + prefix + ".bean) is a"
					+ " default candidate, so it would also replace the default backend",
					"Declare it @Bean(defaultCandidate = false).");
		}
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
				() -> template(beanFactory, name, spec, lockBackend(beanFactory, backendBean, name)));
		template.setDependsOn(backendBean);
		template.setDestroyMethodName("close");
		template.setDefaultCandidate(false);
		template.addQualifier(new AutowireCandidateQualifier(Qualifier.class, name));
		registry.registerBeanDefinition(templateBean, template);

		// Leader elections only where the default backend has them: with their auto-configuration.
		if (registry.containsBeanDefinition(HoldfastLeaderAutoConfiguration.class.getName())) {
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
		}

		registerLifecycle(registry, "holdfastBackendStartup." + name, templateBean, LockBackendStartup.class,
				() -> new LockBackendStartup(beanFactory.getBean(templateBean, DefaultLockTemplate.class), choice,
						beanFactory.getBean(HoldfastProperties.class).isFailFast(), name));
		registerLifecycle(registry, "holdfastGracefulShutdown." + name, templateBean, GracefulLockShutdown.class,
				() -> new GracefulLockShutdown(beanFactory.getBean(templateBean, DefaultLockTemplate.class)));
	}

	/** The {@code LockBackend} bean {@code backendBean} of backend {@code name}, checked to be one. */
	private static LockBackend lockBackend(BeanFactory beanFactory, String backendBean, String name) {
		try {
			return beanFactory.getBean(backendBean, LockBackend.class);
		}
		catch (BeanNotOfRequiredTypeException ex) {
			throw new LockConfigurationException(NamedBackend.PREFIX + "." + name + ".bean is '" + backendBean
					+ "', a " + ex.getActualType().getName() + ", not a LockBackend",
					"Set it to the name of a LockBackend bean.");
		}
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
	 * locks stay apart by their key prefixes; fails when two prefixes there let a key of one be a
	 * key of the other (NBK-6).
	 */
	private void checkSharedClients(Map<String, HoldfastProperties.Backend> backends,
			ConfigurableListableBeanFactory beanFactory) {
		Binder binder = Binder.get(this.environment);
		String base = binder.bind("holdfast.key-prefix", String.class).orElse(LockSettings.DEFAULT_KEY_PREFIX);
		Map<String, Map<String, String>> byClient = new LinkedHashMap<>();
		BackendType defaultType = binder.bind(OnBackendCondition.PROPERTY, BackendType.class).orElse(null);
		if (defaultType != null) {
			byClient.put(defaultType.name().toLowerCase(Locale.ROOT) + " client " + client(beanFactory, defaultType, null),
					new LinkedHashMap<>(Map.of("default", base)));
		}
		backends.forEach((name, spec) -> {
			boolean ownZooKeeper = spec.getType() == BackendType.ZOOKEEPER && spec.getClient() == null
					&& binder.bind(NamedBackend.PREFIX + "." + name + ".zookeeper.connect-string", String.class)
						.isBound();
			if (spec.getType() != null && spec.getType() != BackendType.MEMORY && spec.getType() != BackendType.REDLOCK
					&& !ownZooKeeper) {
				String client = client(beanFactory, spec.getType(), spec.getClient());
				byClient.computeIfAbsent(NamedBackend.typeName(spec) + " client " + client, (key) -> new LinkedHashMap<>())
					.put(name, (spec.getKeyPrefix() != null) ? spec.getKeyPrefix() : base + name + "::");
			}
		});
		byClient.forEach((client, prefixes) -> {
			prefixes.forEach((one, prefix) -> prefixes.forEach((other, otherPrefix) -> {
				if (!one.equals(other) && overlap(prefix, otherPrefix)) {
					String explicit = (backends.containsKey(other) && backends.get(other).getKeyPrefix() != null) ? other
							: one;
					String property = explicit.equals("default") ? "holdfast.key-prefix"
							: NamedBackend.PREFIX + "." + explicit + ".key-prefix";
					throw new LockConfigurationException("The key prefixes '" + prefix + "' of backend '" + one
							+ "' and '" + otherPrefix + "' of backend '" + other + "' on the " + client
							+ " let a key of one be a key of the other, so two locks would be one",
							"Remove " + property + " (a named backend's default, holdfast.key-prefix + '<name>::',"
									+ " keeps it apart), or choose prefixes that do not start one another.");
				}
			}));
			if (prefixes.size() > 1) {
				logger.info("Holdfast backends " + List.copyOf(prefixes.keySet()) + " share the " + client
						+ ": allowed; each keeps its locks under its own key prefix, so a lock name on two of them"
						+ " is two locks");
			}
		});
	}

	/**
	 * The client bean a backend of {@code type} uses, as {@code 'name'}: the one {@code named},
	 * else the application's only or primary one; {@code (the application's)} if that is unknown yet.
	 */
	private static String client(ConfigurableListableBeanFactory beanFactory, BackendType type, @Nullable String named) {
		if (named != null) {
			return "'" + named + "'";
		}
		String typeName = switch (type) {
			case REDIS -> "org.springframework.data.redis.connection.RedisConnectionFactory";
			case JDBC -> "javax.sql.DataSource";
			case ZOOKEEPER -> "org.apache.curator.framework.CuratorFramework";
			default -> null;
		};
		if (typeName == null || !ClassUtils.isPresent(typeName, beanFactory.getBeanClassLoader())) {
			return "(the application's)";
		}
		String[] names = beanFactory.getBeanNamesForType(ClassUtils.resolveClassName(typeName,
				beanFactory.getBeanClassLoader()), true, false);
		List<String> primary = Arrays.stream(names)
			.filter((name) -> beanFactory.containsBeanDefinition(name) && beanFactory.getBeanDefinition(name).isPrimary())
			.toList();
		return (names.length == 1) ? "'" + names[0] + "'"
				: (primary.size() == 1) ? "'" + primary.get(0) + "'" : "(the application's)";
	}

	/**
	 * Whether a key {@code <prefix><name>[:<key>]} can equal one under {@code longer}: names and
	 * keys have no ':', so {@code longer} is apart only if what it adds holds two ':' or starts with one.
	 */
	static boolean overlap(String prefix, String longer) {
		if (!longer.startsWith(prefix)) {
			return false;
		}
		String added = longer.substring(prefix.length());
		long colons = added.chars().filter((c) -> c == ':').count();
		return colons == 0 || (colons == 1 && !added.startsWith(":"));
	}

}
