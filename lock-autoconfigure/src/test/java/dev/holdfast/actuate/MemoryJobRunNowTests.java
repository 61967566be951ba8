package dev.holdfast.actuate;

import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.LockBackend;

/**
 * A job run now on the memory backend: two instances of one JVM share it.
 */
class MemoryJobRunNowTests extends AbstractJobRunNowTests {

	private final InMemoryLockBackend shared = new InMemoryLockBackend();

	@Override
	protected LockBackend newBackend() {
		return this.shared;
	}

}
