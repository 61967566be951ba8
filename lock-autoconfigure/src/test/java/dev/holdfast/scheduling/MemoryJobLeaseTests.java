package dev.holdfast.scheduling;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.LockBackend;

/**
 * Job leases on one {@link InMemoryLockBackend}, the same object in each context.
 */
class MemoryJobLeaseTests extends AbstractJobLeaseTests {

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	@Override
	protected ApplicationContextRunner runner() {
		return new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
			.withBean("sharedBackend", LockBackend.class, () -> this.backend);
	}

	@Override
	protected String expectedBackend() {
		return "memory";
	}

}
