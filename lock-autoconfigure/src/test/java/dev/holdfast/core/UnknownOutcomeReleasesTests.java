package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The background releases after failed acquisitions: sent again while they get no answer, a
 * bounded number of times, never more than a bounded number in flight.
 */
class UnknownOutcomeReleasesTests {

	@Test
	void releaseWithoutAnAnswerIsSentAgainABoundedNumberOfTimes() {
		AtomicInteger calls = new AtomicInteger();
		// First retry after 1 ms instead of 100 (the schedule doubles alike): 9 attempts in ~0.26 s
		// instead of ~25 s.
		UnknownOutcomeReleases releases = new UnknownOutcomeReleases(backend(() -> {
			calls.incrementAndGet();
			throw new LockBackendException("down", null);
		}), 1);
		releases.release("key", "owner");
		await().atMost(Duration.ofSeconds(10)).until(() -> releases.pending() == 0);
		assertThat(calls).hasValue(UnknownOutcomeReleases.ATTEMPTS);
		releases.shutdown();
	}

	@Test
	void releaseThatFreedTheLockIsNotSentAgain() {
		AtomicInteger calls = new AtomicInteger();
		UnknownOutcomeReleases releases = new UnknownOutcomeReleases(backend(() -> calls.incrementAndGet() == 2));
		releases.release("key", "owner");
		await().atMost(Duration.ofSeconds(5)).until(() -> releases.pending() == 0);
		assertThat(calls).as("not held at first (the acquisition still on its way), then released").hasValue(2);
		releases.shutdown();
	}

	@Test
	void releasesInFlightAreBounded() throws Exception {
		CountDownLatch unblock = new CountDownLatch(1);
		UnknownOutcomeReleases releases = new UnknownOutcomeReleases(backend(() -> {
			try {
				unblock.await(20, TimeUnit.SECONDS);
				return true;
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return false;
			}
		}));
		for (int i = 0; i < UnknownOutcomeReleases.MAX_PENDING + 10; i++) {
			releases.release("key-" + i, "owner");
		}
		assertThat(releases.pending()).isEqualTo(UnknownOutcomeReleases.MAX_PENDING);
		unblock.countDown();
		await().atMost(Duration.ofSeconds(20)).until(() -> releases.pending() == 0);
		releases.shutdown();
	}

	private static LockBackend backend(java.util.function.BooleanSupplier release) {
		return new LockBackend() {

			@Override
			public String name() {
				return "test";
			}

			@Override
			public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
				throw new AssertionError("UnknownOutcomeReleases must only release, never acquire");
			}

			@Override
			public boolean release(String key, String owner) {
				return release.getAsBoolean();
			}

		};
	}

}
