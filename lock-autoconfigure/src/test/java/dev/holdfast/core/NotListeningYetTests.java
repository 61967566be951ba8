package dev.holdfast.core;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A waiter whose template's release subscription does not listen yet (it opens in the background,
 * as after a start that awaited nothing: BSL-6) looks again every 50 ms, not after its poll
 * interval: a release announced before it listened reached nobody (DESIGN.md, Acquisition).
 */
class NotListeningYetTests {

	/** Lease, poll interval and wait: a waiter that missed the release would sleep this long. */
	private static final Duration SLOW = Duration.ofMinutes(1);

	@Test
	void aWaiterWhoseSubscriptionDoesNotListenYetTakesALockReleasedMeanwhileLongBeforeItsPoll() throws Exception {
		NotListening backend = new NotListening();
		LockSettings settings = LockSettings.defaults().withLeaseTime(SLOW).withPollInterval(SLOW);
		try (DefaultLockTemplate holder = new DefaultLockTemplate(backend, settings);
				DefaultLockTemplate waiter = new DefaultLockTemplate(backend, settings)) {
			String name = "not-listening-" + UUID.randomUUID();
			Lease held = holder.acquire(name, null, LockOptions.defaults().waitTime(Duration.ZERO));
			CompletableFuture<Long> acquiredAt = new CompletableFuture<>();
			Thread thread = new Thread(() -> {
				try (Lease lease = waiter.acquire(name, null, LockOptions.defaults().waitTime(SLOW))) {
					acquiredAt.complete(System.nanoTime());
				}
				catch (RuntimeException ex) {
					acquiredAt.completeExceptionally(ex);
				}
			});
			thread.start();
			// Refused, and waiting.
			await().during(Duration.ofMillis(200))
				.atMost(Duration.ofSeconds(5))
				.until(() -> thread.getState() == Thread.State.TIMED_WAITING
						|| thread.getState() == Thread.State.WAITING);
			long releasedAt = System.nanoTime();
			// Another template's release: nothing wakes the waiter but its own next look.
			held.close();
			Duration wake = Duration.ofNanos(acquiredAt.get(SLOW.toSeconds(), TimeUnit.SECONDS) - releasedAt);
			assertThat(wake).as("after the release, with a poll interval of %s", SLOW)
				.isLessThan(Duration.ofSeconds(5));
		}
	}

	/** Announces releases, but its subscription, opened in the background, does not listen yet. */
	static final class NotListening extends InMemoryLockBackend {

		@Override
		public AutoCloseable subscribe(Consumer<String> listener) {
			return () -> {
			};
		}

		@Override
		public AutoCloseable subscribe(Consumer<String> listener, Runnable onInterrupted) {
			return () -> {
			};
		}

		@Override
		public boolean isListening() {
			return false;
		}

	}

}
