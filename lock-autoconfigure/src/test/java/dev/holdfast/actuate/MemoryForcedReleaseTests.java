package dev.holdfast.actuate;

import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.LockBackend;

/**
 * Forced release on the memory backend: two templates of one JVM share it.
 */
class MemoryForcedReleaseTests extends AbstractForcedReleaseTests {

	private final InMemoryLockBackend shared = new InMemoryLockBackend();

	@Override
	protected LockBackend newBackend() {
		return this.shared;
	}

}
