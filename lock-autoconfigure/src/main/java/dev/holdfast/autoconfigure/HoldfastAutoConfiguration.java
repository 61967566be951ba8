package dev.holdfast.autoconfigure;

import java.util.List;
import java.util.Locale;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportRuntimeHints;
import org.springframework.core.env.Environment;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockListener;
import dev.holdfast.LockTemplate;
import dev.holdfast.support.CompositeLockListener;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.LockBackend;

/**
 * Auto-configuration of Holdfast: one {@link LockBackend}, chosen by {@code holdfast.backend} or
 * detected; a {@link DefaultLockTemplate} over it, unless the application defines its own
 * {@link LockTemplate} (then annotated methods lock through that one, and
 * {@code @SingleInstanceScheduled} jobs, which need Holdfast's engine, fail at startup); and the
 * {@code @DistributedLock} advisor.
 */
@AutoConfiguration(afterName = { "org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration",
		"org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
		"org.springframework.boot.jdbc.autoconfigure.DataSourceTransactionManagerAutoConfiguration" })
@EnableConfigurationProperties(HoldfastProperties.class)
@ImportRuntimeHints(HoldfastRuntimeHints.class)
@Import({ RedlockBackendConfiguration.class, ZooKeeperBackendConfiguration.class, RedisBackendConfiguration.class,
		JdbcBackendConfiguration.class,
		MemoryBackendConfiguration.class,
		LockAopConfiguration.class, SchedulingConfiguration.class })
public final class HoldfastAutoConfiguration {

	@Bean
	static HoldfastPropertyNamesCheck holdfastPropertyNamesCheck(Environment environment) {
		return new HoldfastPropertyNamesCheck(environment);
	}

	@Bean(destroyMethod = "close")
	@ConditionalOnMissingBean(LockTemplate.class)
	DefaultLockTemplate holdfastLockTemplate(HoldfastProperties properties, ObjectProvider<LockBackend> backends,
			ObjectProvider<LockListener> listeners, ApplicationContext context, Environment environment) {
		LockBackend backend = backends.getIfUnique();
		if (backend == null) {
			throw missingBackend(properties, backends.stream().toList());
		}
		LockSettings settings = settings(properties)
			.withInstanceName(InstanceNameDefault.resolve(properties, context, environment));
		return template(backend, settings, CompositeLockListener.of(listeners.orderedStream().toList()));
	}

	/**
	 * The engine over {@code backend}, the default backend's and each named one's
	 * ({@link NamedBackendsRegistrar}).
	 */
	static DefaultLockTemplate template(LockBackend backend, LockSettings settings, LockListener listener) {
		DefaultLockTemplate template;
		try {
			template = new DefaultLockTemplate(backend, settings, listener);
		}
		catch (IllegalArgumentException ex) {
			throw new LockConfigurationException("Invalid Holdfast settings: " + ex.getMessage(),
					"Correct holdfast.key-prefix or holdfast.max-key-length.");
		}
		// Starts opening the release subscription in the background now, so that it overlaps the
		// creation of the other beans; LockBackendStartup awaits it only with holdfast.fail-fast.
		template.prepare();
		return template;
	}

	/** Only with {@code holdfast.backends}: without, nothing is registered, and --debug says so. */
	@Bean
	@Conditional(OnNamedBackendsCondition.class)
	static NamedBackendsRegistrar holdfastNamedBackendsRegistrar(Environment environment) {
		return new NamedBackendsRegistrar(environment);
	}

	@Bean
	@ConditionalOnSingleCandidate(DefaultLockTemplate.class)
	LockBackendStartup holdfastBackendStartup(DefaultLockTemplate holdfastLockTemplate,
			HoldfastProperties properties, Environment environment, ConfigurableListableBeanFactory beanFactory) {
		return new LockBackendStartup(holdfastLockTemplate, OnBackendCondition.choice(environment, beanFactory),
				properties.isFailFast(), null);
	}

	@Bean
	@ConditionalOnSingleCandidate(DefaultLockTemplate.class)
	GracefulLockShutdown holdfastGracefulShutdown(DefaultLockTemplate holdfastLockTemplate) {
		return new GracefulLockShutdown(holdfastLockTemplate);
	}

	static LockSettings settings(HoldfastProperties properties) {
		try {
			return LockSettings.defaults()
				.withKeyPrefix(properties.getKeyPrefix())
				.withWaitTime(properties.getWaitTime())
				.withLeaseTime(properties.getLeaseTime())
				.withPollInterval(properties.getPollInterval())
				.withMaxKeyLength(properties.getMaxKeyLength())
				.withKeyValuesShown(properties.isShowKeyValues())
				.withReleaseInBackground(properties.isReleaseInBackground());
		}
		catch (IllegalArgumentException ex) {
			String message = String.valueOf(ex.getMessage())
				.replace("waitTime", "holdfast.wait-time")
				.replace("leaseTime", "holdfast.lease-time")
				.replace("pollInterval", "holdfast.poll-interval")
				.replace("maxKeyLength", "holdfast.max-key-length");
			throw new LockConfigurationException("Invalid Holdfast settings: " + message,
					"Correct the holdfast.* property named in the description.");
		}
	}

	private static LockConfigurationException missingBackend(HoldfastProperties properties, List<LockBackend> found) {
		if (found.size() > 1) {
			return new LockConfigurationException(
					"Holdfast found " + found.size() + " LockBackend beans and cannot tell which to use",
					"Keep one LockBackend bean, or mark the one to use @Primary.");
		}
		BackendType type = properties.getBackend();
		String name = (type != null) ? type.name().toLowerCase(Locale.ROOT) : "(auto)";
		String library = switch ((type != null) ? type : BackendType.MEMORY) {
			case REDIS -> "spring-boot-starter-data-redis";
			case REDLOCK -> "org.redisson:redisson";
			case ZOOKEEPER -> "org.apache.curator:curator-framework";
			case JDBC -> "spring-boot-starter-jdbc and your database's driver";
			case MEMORY -> "nothing: the memory backend is built in";
		};
		return new LockConfigurationException(
				"holdfast.backend=" + name + " is set, but its client library is not on the classpath",
				"Add " + library + " to the application's dependencies, or choose another holdfast.backend "
						+ "(redis, redlock, zookeeper, jdbc, memory).");
	}

}
