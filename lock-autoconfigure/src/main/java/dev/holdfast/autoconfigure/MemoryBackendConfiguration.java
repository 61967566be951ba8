package dev.holdfast.autoconfigure;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.LockBackend;

/**
 * The in-memory backend, chosen explicitly or as the last resort.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnBackend(BackendType.MEMORY)
@ConditionalOnMissingBean(LockBackend.class)
class MemoryBackendConfiguration {

	private static final Log logger = LogFactory.getLog(MemoryBackendConfiguration.class);

	@Bean
	InMemoryLockBackend holdfastLockBackend(Environment environment) {
		if (!environment.containsProperty(OnBackendCondition.PROPERTY)) {
			logger.warn("Holdfast found no Redlock nodes, ZooKeeper ensemble, RedisConnectionFactory or DataSource and "
					+ "keeps locks in memory: they are local to this JVM and do not exclude other instances. Set holdfast.backend=memory to "
					+ "silence this warning, or configure a shared backend.");
		}
		return named();
	}

	/** A memory backend, the default one or one of {@code holdfast.backends.<name>}. */
	static InMemoryLockBackend named() {
		return new InMemoryLockBackend();
	}

}
