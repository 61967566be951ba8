package dev.holdfast.core;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockListener;
import dev.holdfast.LockOptions;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * The engine's rules that hold on every backend, on the in-memory backend behind a switch that
 * can make the backend fail or answer slowly.
 */
class EngineRulesTests {

	private final Switchable backend = new Switchable();

	private final List<String> events = new CopyOnWriteArrayList<>();

	private final DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults(),
			new LockListener() {

				@Override
				public void leaseLost(String name, String backend) {
					EngineRulesTests.this.events.add("lost " + name);
				}

				@Override
				public void releaseFailed(String name, String backend, RuntimeException ex) {
					EngineRulesTests.this.events.add("release failed " + name);
				}

			});

	private final String name = "rules-" + UUID.randomUUID();

	@AfterEach
	void close() {
		this.backend.down = false;
		this.template.close();
	}

	@Test
	void waitersOfOneKeyQueueLocallyAndOnlyTheHeadAttempts() throws Exception {
		Lease held = this.template.acquire(this.name, null, LockOptions.defaults().waitTime(Duration.ZERO));
		List<CompletableFuture<Optional<Lease>>> waiters = new ArrayList<>();
		for (int i = 0; i < 4; i++) {
			waiters.add(CompletableFuture.supplyAsync(() -> this.template.tryAcquire(this.name, null,
					LockOptions.defaults().waitTime(Duration.ofMillis(600)))));
		}
		await().atMost(Duration.ofSeconds(5)).until(() -> this.template.heldLeases().size() == 1
				&& this.backend.attempts.get() >= 2);
		int before = this.backend.attempts.get();
		TimeUnit.MILLISECONDS.sleep(300);
		// The memory backend announces releases: the head waits for one (up to the poll interval),
		// the three behind it do not attempt at all.
		assertThat(this.backend.attempts.get() - before).isLessThanOrEqualTo(1);
		held.close();
		long acquired = 0;
		for (CompletableFuture<Optional<Lease>> waiter : waiters) {
			Optional<Lease> lease = waiter.get(5, TimeUnit.SECONDS);
			if (lease.isPresent()) {
				acquired++;
				lease.get().close();
			}
		}
		assertThat(acquired).isPositive();
	}

	@Test
	void waitersBehindAHeadWhoseBackendCallFailedFailWithinOneNetworkTimeout() throws Exception {
		Lease held = this.template.acquire(this.name, null, LockOptions.defaults().waitTime(Duration.ZERO));
		List<CompletableFuture<Optional<Lease>>> waiters = new ArrayList<>();
		for (int i = 0; i < 3; i++) {
			waiters.add(CompletableFuture.supplyAsync(() -> this.template.tryAcquire(this.name, null,
					LockOptions.defaults().waitTime(Duration.ofSeconds(30)))));
		}
		await().atMost(Duration.ofSeconds(5)).until(() -> this.template.lines.size() == 1
				&& this.backend.attempts.get() >= 2);
		// The backend goes down: each call answers with a failure after 500 ms (a network timeout).
		this.backend.down = true;
		long start = System.nanoTime();
		for (CompletableFuture<Optional<Lease>> waiter : waiters) {
			assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> waiter.get(10, TimeUnit.SECONDS))
				.withCauseInstanceOf(LockBackendException.class);
		}
		// Each one after at most the head's next attempt (a poll interval) and one timeout, not one
		// timeout after the one ahead of it.
		assertThat(Duration.ofNanos(System.nanoTime() - start))
			.isLessThan(LockSettings.DEFAULT_POLL_INTERVAL.plus(Switchable.TIMEOUT).plusMillis(700));
		this.backend.down = false;
		held.close();
	}

	@Test
	void aReentrantHoldGetsAtLeastTheLeaseItAsksFor() {
		try (Lease outer = this.template.acquire(this.name, null,
				LockOptions.defaults().leaseTime(Duration.ofMillis(800)).renew(false))) {
			try (Lease inner = this.template.acquire(this.name, null,
					LockOptions.defaults().leaseTime(Duration.ofMinutes(5)).renew(false))) {
				assertThat(inner.fencingToken()).isEqualTo(outer.fencingToken());
				assertThat(inner.expiresAt()).isAfter(Instant.now().plus(Duration.ofMinutes(4)));
				// Extended on the backend too: another owner cannot take it after the outer 800 ms.
				await().pollDelay(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(2)).until(() -> true);
				assertThat(this.backend.tryAcquire(this.template.keyFor(this.name, null), "other", Duration.ofSeconds(1))
					.acquired()).isFalse();
				assertThat(outer.isValid()).isTrue();
			}
		}
	}

	@Test
	void stoppingAcquisitionsEndsTheWaitingOnesBlockingAndNot() throws Exception {
		DefaultLockTemplate template = new DefaultLockTemplate(new InMemoryLockBackend(), LockSettings.defaults());
		Lease held = template.acquire(this.name, null, LockOptions.defaults().waitTime(Duration.ZERO));
		CompletableFuture<Optional<Lease>> blocking = CompletableFuture.supplyAsync(() -> template
			.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(30))));
		CompletableFuture<Lease> nonBlocking = template.tryAcquireAsync(this.name, null,
				LockOptions.defaults().waitTime(Duration.ofSeconds(30)));
		await().atMost(Duration.ofSeconds(5)).until(() -> template.lines.size() == 1);
		template.stopAcquiring();
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> blocking.get(5, TimeUnit.SECONDS))
			.withCauseInstanceOf(LockBackendException.class)
			.withMessageContaining("shutting down");
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> nonBlocking.get(5, TimeUnit.SECONDS))
			.withCauseInstanceOf(LockBackendException.class)
			.withMessageContaining("shutting down");
		assertThat(template.lines.size()).isZero();
		held.close();
		template.close();
	}

	@Test
	void aReleaseThatFailedIsSentAgainAndTheLockFreedBeforeItsLeaseRunsOut() {
		Lease lease = this.template.acquire(this.name, null, LockOptions.defaults().leaseTime(Duration.ofMinutes(5)));
		this.backend.failReleases.set(1);
		lease.close();
		await().atMost(Duration.ofSeconds(5)).until(() -> this.backend.delegate.size() == 0);
		assertThat(this.events).containsExactly("release failed " + this.name);
	}

	@Test
	void aLeaseThatRanOutBeforeItsReleaseIsReportedLostOnce() {
		Lease lease = this.template.acquire(this.name, null,
				LockOptions.defaults().leaseTime(Duration.ofMillis(100)).renew(false));
		await().atMost(Duration.ofSeconds(2)).until(() -> !lease.isValid());
		lease.close();
		lease.close();
		assertThat(this.events).containsExactly("lost " + this.name);
	}

	/** The memory backend, that can fail every call after a network timeout, or fail releases. */
	static final class Switchable implements LockBackend, dev.holdfast.spi.ReleaseEvents, dev.holdfast.spi.LeaseRenewal {

		static final Duration TIMEOUT = Duration.ofMillis(500);

		final InMemoryLockBackend delegate = new InMemoryLockBackend();

		final AtomicInteger attempts = new AtomicInteger();

		final AtomicInteger failReleases = new AtomicInteger();

		volatile boolean down;

		@Override
		public String name() {
			return "switchable";
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			this.attempts.incrementAndGet();
			if (this.down) {
				try {
					TimeUnit.MILLISECONDS.sleep(TIMEOUT.toMillis());
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
				throw new LockBackendException("timed out", null);
			}
			return this.delegate.tryAcquire(key, owner, ttl);
		}

		@Override
		public boolean release(String key, String owner) {
			if (this.down || this.failReleases.getAndUpdate((n) -> Math.max(0, n - 1)) > 0) {
				throw new LockBackendException("release failed", null);
			}
			return this.delegate.release(key, owner);
		}

		@Override
		public AutoCloseable subscribe(java.util.function.Consumer<String> listener) {
			return this.delegate.subscribe(listener);
		}

		@Override
		public java.util.Set<String> renew(java.util.Collection<dev.holdfast.spi.HeldLock> locks) {
			return this.delegate.renew(locks);
		}

	}

}
