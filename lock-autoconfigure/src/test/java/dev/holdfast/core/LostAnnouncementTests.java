package dev.holdfast.core;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.TestThreads;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AnnouncedReleases;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A release of this process that the backend is asked to announce: the local racer waits for
 * the announcement at most {@link Racer#ANNOUNCEMENT_WAIT_NANOS} after the release's answer, never
 * the poll interval, and only a template whose own subscription listens asks for it.
 */
class LostAnnouncementTests {

	private static final Duration POLL = Duration.ofSeconds(5);

	/** Announces releases, but delivers none: every announcement is lost. */
	static final class DeafBackend implements LockBackend, AnnouncedReleases {

		final InMemoryLockBackend delegate = new InMemoryLockBackend();

		final AtomicInteger announcedReleases = new AtomicInteger();

		@Override
		public String name() {
			return "deaf";
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			return this.delegate.tryAcquire(key, owner, ttl);
		}

		@Override
		public boolean release(String key, String owner) {
			return this.delegate.release(key, owner);
		}

		@Override
		public boolean releaseAnnounced(String key, String owner) {
			this.announcedReleases.incrementAndGet();
			return this.delegate.release(key, owner);
		}

		@Override
		public AutoCloseable subscribe(Consumer<String> listener) {
			return () -> {
			};
		}

	}

	@Test
	void lostAnnouncementOfALocalReleaseDoesNotHoldTheLocalWaiterForThePollInterval() throws Exception {
		DeafBackend backend = new DeafBackend();
		DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults().withPollInterval(POLL));
		try {
			template.prepare();
			assertThat(template.releaseEventsListening()).isTrue();
			long handoff = localHandoffMillis(template);
			assertThat(backend.announcedReleases).hasValue(1);
			assertThat(handoff).isLessThan(1000);
		}
		finally {
			template.close();
		}
	}

	@Test
	void templateWithoutItsOwnSubscriptionDoesNotAskForAnAnnouncement() throws Exception {
		DeafBackend backend = new DeafBackend();
		DefaultLockTemplate subscribed = new DefaultLockTemplate(backend, LockSettings.defaults().withPollInterval(POLL));
		DefaultLockTemplate other = new DefaultLockTemplate(backend, LockSettings.defaults().withPollInterval(POLL));
		try {
			subscribed.prepare();
			long handoff = localHandoffMillis(other);
			assertThat(backend.announcedReleases).hasValue(0);
			assertThat(handoff).isLessThan(1000);
		}
		finally {
			subscribed.close();
			other.close();
		}
	}

	/** One thread holds a lock, another of the same template waits for it; the time from release to takeover. */
	private static long localHandoffMillis(DefaultLockTemplate template) throws InterruptedException {
		String name = "handoff-" + UUID.randomUUID();
		Lease held = template.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5)));
		AtomicLong acquiredAt = new AtomicLong();
		Thread waiter = new Thread(() -> {
			try (Lease lease = template.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(20)))) {
				acquiredAt.set(System.nanoTime());
			}
		});
		waiter.start();
		TestThreads.awaitParked(waiter, Duration.ofMillis(300));
		long releasedAt = System.nanoTime();
		held.close();
		waiter.join(15_000);
		assertThat(waiter.isAlive()).isFalse();
		assertThat(acquiredAt.get()).isNotZero();
		return (acquiredAt.get() - releasedAt) / 1_000_000;
	}

}
