package dev.holdfast.autoconfigure;

import org.redisson.api.RedissonClient;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.redlock.RedlockLockBackend;
import dev.holdfast.redlock.RedlockSettings;
import dev.holdfast.spi.LockBackend;

/**
 * The Redlock backend, when {@code holdfast.backend=redlock} (or Redlock nodes are configured and
 * no backend is named): one Redisson client per node in {@code holdfast.redlock.nodes}.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnBackend(BackendType.REDLOCK)
@ConditionalOnMissingBean(LockBackend.class)
@EnableConfigurationProperties({ HoldfastProperties.class, HoldfastRedlockProperties.class })
class RedlockBackendConfiguration {

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(RedissonClient.class)
	static class RedissonAvailable {

		@Bean(destroyMethod = "close")
		RedlockLockBackend redlockLockBackend(HoldfastRedlockProperties properties, HoldfastProperties holdfast) {
			return backend(properties, holdfast.getKeyPrefix());
		}

		/** The redlock backend of {@code holdfast.backends.<name>}, built as the default one. */
		static RedlockLockBackend named(NamedBackend named) {
			return backend(named.settings(HoldfastRedlockProperties.class), named.keyPrefix());
		}

		private static RedlockLockBackend backend(HoldfastRedlockProperties properties, String prefix) {
			RedlockSettings settings = settings(properties);
			if (!prefix.isEmpty()) {
				// Applications with different key prefixes share no locks: they need not hear each
				// other's releases.
				settings = settings.withReleaseChannel(prefix + "redlock:released");
			}
			RedlockLockBackend backend = RedlockLockBackend.connect(properties.getNodes(), properties.getUsername(),
					properties.getPassword(), properties.getConnectTimeout(), settings);
			backend.logSetupWarnings();
			return backend;
		}

		private static RedlockSettings settings(HoldfastRedlockProperties properties) {
			if (properties.getNodes().isEmpty()) {
				throw new LockConfigurationException("The redlock backend is selected, but no node is configured.",
						"Set holdfast.redlock.nodes to the addresses of the independent Redis masters, e.g. "
								+ "redis://redis-1:6379, redis://redis-2:6379, redis://redis-3:6379.");
			}
			try {
				RedlockLockBackend.checkAddresses(properties.getNodes());
			}
			catch (IllegalArgumentException ex) {
				throw new LockConfigurationException("Invalid holdfast.redlock.nodes: " + ex.getMessage() + ".",
						"Write each entry of holdfast.redlock.nodes as redis://host:port or rediss://host:port, "
								+ "each node once.");
			}
			if (properties.getConnectTimeout().isNegative() || properties.getConnectTimeout().isZero()) {
				throw new LockConfigurationException(
						"holdfast.redlock.connect-timeout must be positive, was " + properties.getConnectTimeout() + ".",
						"Set holdfast.redlock.connect-timeout to a positive duration, e.g. 1s.");
			}
			try {
				return new RedlockSettings(properties.getNodeTimeout(), properties.getDriftFactor(),
						properties.getMinDrift());
			}
			catch (IllegalArgumentException ex) {
				throw new LockConfigurationException("Invalid Redlock timing: " + ex.getMessage() + ".",
						"Set holdfast.redlock.node-timeout to a positive duration, holdfast.redlock.drift-factor "
								+ "between 0 and 0.5, and holdfast.redlock.min-drift to a duration of zero or more.");
			}
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnMissingClass("org.redisson.api.RedissonClient")
	static class RedissonMissing {

		@Bean
		LockBackend redlockLockBackend() {
			throw new LockConfigurationException(
					"The redlock backend is selected, but Redisson (org.redisson:redisson) is not on the classpath.",
					"Add the org.redisson:redisson dependency, or choose another holdfast.backend.");
		}

	}

}
