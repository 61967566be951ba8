package dev.holdfast.scheduling;

import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.LockBackend;

/**
 * Three instances sharing one backend that has locks only, so that every tick is claimed as a
 * lock of its own: the scheduler's path for backends without tick records.
 */
class LocksOnlySingleInstanceClusterTests extends MemorySingleInstanceClusterTests {

	@Override
	protected LockBackend sharedBackend(InMemoryLockBackend memory) {
		return new LocksOnlyBackend(memory);
	}

	@Override
	protected String label() {
		return "locks only (third party, on memory)";
	}

	@Override
	protected boolean judgesTicksByItsClock() {
		return false;
	}

}
