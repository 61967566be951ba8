package dev.holdfast.core;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A renewal and an {@code extend()} of one lease whose requests overlap: the backend applies
 * whichever arrives last, so the lease must never believe the longer time to live while the
 * backend may have applied the shorter one.
 */
class RenewalExtendRaceTests {

	private static final Duration SHORT = Duration.ofSeconds(2);

	private static final Duration LONG = Duration.ofSeconds(20);

	private final InMemoryLockBackend memory = new InMemoryLockBackend();

	private final DelayedRenewalBackend backend = new DelayedRenewalBackend(this.memory);

	private final DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults());

	private final String name = "race-" + UUID.randomUUID();

	@AfterEach
	void close() {
		this.backend.releaseRenewal.countDown();
		this.template.close();
	}

	@Test
	void renewalThatLandsAfterExtendNeverMakesTheLeaseBelieveTheLongerTtl() throws Exception {
		Lease lease = this.template.acquire(this.name, null, LockOptions.defaults().leaseTime(SHORT));
		// The renewer sent the lease's time to live (SHORT) and is held before the backend applies it.
		assertThat(this.backend.renewalEntered.await(5, TimeUnit.SECONDS)).isTrue();
		CompletableFuture<Boolean> extended = CompletableFuture.supplyAsync(() -> {
			this.backend.extendThread = Thread.currentThread();
			return lease.extend(LONG);
		});
		// The renewal goes on once extend() has completed, or once extend() waits for it.
		this.backend.releaseRenewal.countDown();
		assertThat(extended.get(10, TimeUnit.SECONDS)).isTrue();
		await().atMost(Duration.ofSeconds(5)).until(() -> this.backend.renewalsDone >= 1);
		Instant now = Instant.now();
		// The backend's own view: how long the lock still lives there.
		AcquireResult probe = this.memory.tryAcquire(lease.key(), "probe-" + UUID.randomUUID(), Duration.ofMillis(1));
		assertThat(probe.acquired()).as("the lock is still held on the backend").isFalse();
		Instant backendExpiry = now.plusMillis(probe.holderRemainingMillis());
		assertThat(lease.isValid()).isTrue();
		assertThat(lease.expiresAt()).as("the lease's expiry against the backend's")
			.isBeforeOrEqualTo(backendExpiry.plusMillis(50));
		lease.close();
	}

	@Test
	void extendToAShorterTtlBehindARenewalEndsWithTheShorterTtl() throws Exception {
		Lease lease = this.template.acquire(this.name, null, LockOptions.defaults().leaseTime(Duration.ofSeconds(3)));
		// The renewer sent the lease's time to live (3 s) and is held before the backend applies it.
		assertThat(this.backend.renewalEntered.await(5, TimeUnit.SECONDS)).isTrue();
		CompletableFuture<Boolean> extended = CompletableFuture.supplyAsync(() -> {
			this.backend.extendThread = Thread.currentThread();
			return lease.extend(Duration.ofMillis(1500));
		});
		// The renewal goes on once extend() waits for it; the extend follows its answer.
		this.backend.releaseRenewal.countDown();
		assertThat(extended.get(10, TimeUnit.SECONDS)).isTrue();
		assertThat(this.backend.renewalsDone).as("the renewal was answered before the extend was sent").isEqualTo(1);
		// Long enough for anything left of the renewal's answer to land, well before the next renewal (0.5 s).
		await().pollDelay(Duration.ofMillis(300)).until(() -> true);
		Instant now = Instant.now();
		AcquireResult probe = this.memory.tryAcquire(lease.key(), "probe-" + UUID.randomUUID(), Duration.ofMillis(1));
		assertThat(probe.acquired()).as("the lock is still held on the backend").isFalse();
		Instant backendExpiry = now.plusMillis(probe.holderRemainingMillis());
		assertThat(lease.expiresAt()).as("the extend's shorter time to live, not the renewal's answered before it")
			.isBeforeOrEqualTo(backendExpiry.plusMillis(50));
		lease.close();
	}

	/**
	 * Holds the renewer's first renewal until {@code releaseRenewal} is counted down and then
	 * until the concurrent extend has either completed or waits (parked) for the renewal, so that
	 * the renewal reaches the backend after the extend wherever the engine lets it.
	 */
	static final class DelayedRenewalBackend implements LockBackend, LeaseRenewal {

		private final InMemoryLockBackend delegate;

		final CountDownLatch renewalEntered = new CountDownLatch(1);

		final CountDownLatch releaseRenewal = new CountDownLatch(1);

		volatile Thread extendThread;

		volatile boolean extendDone;

		volatile int renewalsDone;

		DelayedRenewalBackend(InMemoryLockBackend delegate) {
			this.delegate = delegate;
		}

		@Override
		public String name() {
			return "delayed";
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
		public Set<String> renew(Collection<HeldLock> locks) {
			if (Thread.currentThread() == this.extendThread) {
				try {
					return this.delegate.renew(locks);
				}
				finally {
					this.extendDone = true;
				}
			}
			if (this.renewalEntered.getCount() > 0) {
				this.renewalEntered.countDown();
				try {
					assertThat(this.releaseRenewal.await(10, TimeUnit.SECONDS)).isTrue();
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
				await().atMost(Duration.ofSeconds(10)).until(() -> this.extendDone || extendWaits());
			}
			try {
				return this.delegate.renew(locks);
			}
			finally {
				this.renewalsDone++;
			}
		}

		private boolean extendWaits() {
			Thread thread = this.extendThread;
			return thread != null && (thread.getState() == Thread.State.WAITING
					|| thread.getState() == Thread.State.TIMED_WAITING);
		}

	}

}
