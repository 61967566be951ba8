package dev.holdfast.test;

import org.junit.jupiter.api.Test;

import dev.holdfast.LockListener.LockObservation;
import dev.holdfast.test.LockRecorder.Acquisition;
import dev.holdfast.test.LockRecorder.Outcome;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * {@link LockRecorder} on its own, as the lock template drives a listener.
 */
class LockRecorderUnitTests {

	private final LockRecorder recorder = new LockRecorder();

	@Test
	void keepsOnlyTheMostRecentAcquisitions() {
		for (int i = 0; i <= LockRecorder.CAPACITY; i++) {
			this.recorder.acquiring("lock", "holdfast:lock:" + i, "memory").acquired(i);
		}
		assertThat(this.recorder.acquisitions()).hasSize(LockRecorder.CAPACITY)
			.first()
			.extracting(Acquisition::key)
			.isEqualTo("holdfast:lock:1");
		this.recorder.clear();
		assertThat(this.recorder.acquisitions()).isEmpty();
	}

	@Test
	void theFirstOutcomeOfEachStageCounts() {
		LockObservation released = this.recorder.acquiring("a", "holdfast:a", "memory");
		released.acquired(7);
		released.released();
		released.lost();
		LockObservation refused = this.recorder.acquiring("b", "holdfast:b", "memory");
		refused.notAcquired();
		refused.acquired(8);
		refused.released();
		assertThat(this.recorder.acquisitions()).extracting(Acquisition::outcome)
			.containsExactly(Outcome.RELEASED, Outcome.NOT_ACQUIRED);
		assertThat(this.recorder.acquisitions()).extracting(Acquisition::fencingToken).containsExactly(7L, 0L);
	}

	@Test
	void assertionsOutsideAnApplicationContextSayHowToAddTheRecorder() {
		assertThatIllegalStateException().isThrownBy(() -> this.recorder.keyFor("a", null))
			.withMessageContaining("@Import(LockRecorder.class)");
	}

}
