package dev.holdfast.scheduling;

import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.LockBackend;

/**
 * Three instances sharing one {@link InMemoryLockBackend} (the same object in each context).
 */
class MemorySingleInstanceClusterTests extends AbstractSingleInstanceClusterTests {

	private final LockBackend backend = sharedBackend(new InMemoryLockBackend());

	/** The backend that every instance uses, made of {@code memory}. */
	protected LockBackend sharedBackend(InMemoryLockBackend memory) {
		return memory;
	}

	@Override
	protected void configureBackend(SpringApplicationBuilder builder) {
		builder.sources(AutoConfig.class)
			.initializers((context) -> context.getBeanFactory().registerSingleton("sharedBackend", this.backend));
	}

	@Override
	protected String expectedBackend() {
		return "memory";
	}

	@Override
	protected boolean runUnskewed() {
		return true;
	}

	@Configuration(proxyBeanMethods = false)
	@ImportAutoConfiguration(HoldfastAutoConfiguration.class)
	static class AutoConfig {

	}

}
