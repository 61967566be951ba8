package dev.holdfast;

import java.time.Duration;

import static org.awaitility.Awaitility.await;

/**
 * Waiting in tests on a thread's state instead of sleeping: a thread that waits for a lock
 * parks, and a test that must act while it waits (release, break the backend) waits for that.
 */
public final class TestThreads {

	private TestThreads() {
	}

	/**
	 * Waits, at most 5 s, until {@code thread} has stayed parked ({@code WAITING} or
	 * {@code TIMED_WAITING}) for {@code parkedFor} without a break: past short parks between
	 * attempts, asleep in its pause.
	 */
	public static void awaitParked(Thread thread, Duration parkedFor) {
		await().during(parkedFor).atMost(parkedFor.plusSeconds(5))
			.until(() -> thread.getState() == Thread.State.WAITING || thread.getState() == Thread.State.TIMED_WAITING);
	}

}
