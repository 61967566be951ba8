package dev.holdfast.semaphore;

import org.junit.jupiter.api.Test;

import dev.holdfast.spi.LockBackend;

/**
 * A waiting permit call on the memory backend, which announces every release: two templates of
 * one JVM share it.
 */
class MemoryPermitWakeTests extends AbstractPermitWakeTests {

	private final PermitSlotsTests.RecordingBackend shared = new PermitSlotsTests.RecordingBackend();

	@Override
	protected long attempts() {
		return this.shared.acquisitions.size();
	}

	@Override
	protected LockBackend newBackend() {
		return this.shared;
	}

	@Test
	void aWaitingCallHoldsAReleasedSlotAtOnceWhicheverItIs() throws Exception {
		aWaitingCallHoldsAnyReleasedSlotAtOnce();
	}

}
