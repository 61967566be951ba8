package dev.holdfast.core;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SEM-8: the registry of waiting permit calls wakes one call per release of a slot, the oldest not
 * woken yet, passes a wake its call did not use on, and keeps a semaphore only while a call waits.
 */
class SlotWakesTests {

	private static final String[] SLOTS = { "s#0", "s#1", "s#2" };

	private final SlotWakes registry = new SlotWakes();

	@Test
	void aReleaseWakesTheOldestOfTwoWaitingCallsOnly() {
		SlotWake older = this.registry.wake(SLOTS);
		SlotWake newer = this.registry.wake(SLOTS);
		// the newer call's wait registers first: the older call is still the first woken
		this.registry.enter(newer, null);
		this.registry.enter(older, null);
		this.registry.released("s#2");
		assertThat(older.woken).as("the older call woken").isTrue();
		assertThat(newer.woken).as("the newer call woken by the same release").isFalse();
		// its wait ends and it tries the released slot
		this.registry.leave(older, false);
		assertThat(older.takeReleased()).isEqualTo(2);
		this.registry.released("s#0");
		assertThat(newer.takeReleased()).as("the next release wakes the next call").isZero();
		this.registry.released("other#1");
		assertThat(newer.takeReleased()).as("a release of another semaphore").isEqualTo(-1);
	}

	@Test
	void aWakeItsCallDidNotUsePassesOnAndTheSemaphoreGoesWithItsLastCall() {
		SlotWake first = this.registry.wake(SLOTS);
		SlotWake second = this.registry.wake(SLOTS);
		this.registry.enter(first, null);
		this.registry.enter(second, null);
		this.registry.released("s#1");
		// the first call's wait took its own slot meanwhile: the released slot is the second's to try
		this.registry.leave(first, true);
		assertThat(second.takeReleased()).isEqualTo(1);
		assertThat(this.registry.size()).as("slot keys of a semaphore with a waiting call").isEqualTo(3);
		this.registry.leave(second, false);
		assertThat(this.registry.size()).as("slot keys once the last call left").isZero();
	}

}
