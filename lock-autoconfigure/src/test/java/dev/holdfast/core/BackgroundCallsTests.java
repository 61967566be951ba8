package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
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
 * The background calls: releases after failed acquisitions sent again while they get no answer
 * or "not held", a bounded number of times; failed releases sent again until answered; never
 * more than a bounded number pending.
 */
class BackgroundCallsTests {

	private static final Failures FAILURES = new Failures("test", LockSettings.defaults());

	@Test
	void releaseWithoutAnAnswerIsSentAgainABoundedNumberOfTimes() {
		AtomicInteger calls = new AtomicInteger();
		// First retry after 1 ms instead of 100 (the schedule doubles alike): 9 attempts in ~0.26 s
		// instead of ~25 s.
		BackgroundCalls releases = new BackgroundCalls(backend(() -> {
			calls.incrementAndGet();
			throw new LockBackendException("down", null);
		}), FAILURES, 1);
		releases.releaseUnknownOutcome("key", "owner");
		await().atMost(Duration.ofSeconds(10)).until(() -> releases.pending() == 0);
		assertThat(calls).hasValue(BackgroundCalls.ATTEMPTS);
		releases.close();
	}

	@Test
	void aGiveBackAfterAStageIsPendingFromTheStartAndNotHeldIsFinal() {
		AtomicInteger calls = new AtomicInteger();
		BackgroundCalls releases = new BackgroundCalls(backend(() -> calls.incrementAndGet() < 0), FAILURES);
		CompletableFuture<Void> before = new CompletableFuture<>();
		releases.giveBackAfter(before, "key", "owner");
		assertThat(releases.pending()).as("pending before its stage completed: a drain waits for it").isOne();
		assertThat(calls).hasValue(0);
		before.complete(null);
		await().atMost(Duration.ofSeconds(5)).until(() -> releases.pending() == 0);
		assertThat(calls).as("sent once its stage completed; \"not held\" is final").hasValue(1);
		releases.close();
	}

	@Test
	void releaseThatFreedTheLockIsNotSentAgain() {
		AtomicInteger calls = new AtomicInteger();
		BackgroundCalls releases = new BackgroundCalls(backend(() -> calls.incrementAndGet() == 2), FAILURES);
		releases.releaseUnknownOutcome("key", "owner");
		await().atMost(Duration.ofSeconds(5)).until(() -> releases.pending() == 0);
		assertThat(calls).as("not held at first (the acquisition still on its way), then released").hasValue(2);
		releases.close();
	}

	@Test
	void releasesInFlightAreBounded() throws Exception {
		CountDownLatch unblock = new CountDownLatch(1);
		BackgroundCalls releases = new BackgroundCalls(backend(() -> {
			try {
				unblock.await(20, TimeUnit.SECONDS);
				return true;
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				return false;
			}
		}), FAILURES);
		for (int i = 0; i < BackgroundCalls.MAX_PENDING + 10; i++) {
			releases.releaseUnknownOutcome("key-" + i, "owner");
		}
		assertThat(releases.pending()).isEqualTo(BackgroundCalls.MAX_PENDING);
		unblock.countDown();
		await().atMost(Duration.ofSeconds(20)).until(() -> releases.pending() == 0);
		releases.close();
	}

	@Test
	void failedReleaseIsSentAgainUntilAnsweredEvenNotHeld() {
		AtomicInteger calls = new AtomicInteger();
		BackgroundCalls releases = new BackgroundCalls(backend(() -> {
			if (calls.incrementAndGet() < 3) {
				throw new LockBackendException("down", null);
			}
			return false;
		}), FAILURES, 1);
		releases.retryRelease("key", "owner");
		await().atMost(Duration.ofSeconds(5)).until(() -> releases.pending() == 0);
		assertThat(calls).as("two failures, then an answer ends it").hasValue(3);
		assertThat(releases.givenUp()).isZero();
		releases.close();
	}

	@Test
	void callThatFailsEveryAttemptIsGivenUpAndCounted() {
		BackgroundCalls releases = new BackgroundCalls(backend(() -> {
			throw new LockBackendException("down", null);
		}), FAILURES, 1);
		releases.retryRelease("key", "owner");
		await().atMost(Duration.ofSeconds(10)).until(() -> releases.pending() == 0);
		assertThat(releases.givenUp()).isOne();
		releases.close();
	}

	private static LockBackend backend(java.util.function.BooleanSupplier release) {
		return new LockBackend() {

			@Override
			public String name() {
				return "test";
			}

			@Override
			public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
				throw new AssertionError("BackgroundCalls must only release, never acquire");
			}

			@Override
			public boolean release(String key, String owner) {
				return release.getAsBoolean();
			}

		};
	}

}
