package dev.holdfast.core;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * The engine's non-blocking path on the memory backend: two templates on one backend are two
 * instances of a cluster.
 */
class NonBlockingAcquisitionTests {

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final LockSettings settings = LockSettings.defaults().withPollInterval(Duration.ofSeconds(5));

	private final DefaultLockTemplate template = new DefaultLockTemplate(this.backend, this.settings);

	private final DefaultLockTemplate other = new DefaultLockTemplate(this.backend, this.settings);

	private final String name = "async-" + UUID.randomUUID();

	@AfterEach
	void close() {
		this.template.close();
		this.other.close();
	}

	private static LockOptions waitFor(Duration wait) {
		return LockOptions.defaults().waitTime(wait);
	}

	@Test
	void waiterWakesOnTheReleaseEventNotThePoll() throws Exception {
		Lease held = this.other.acquire(this.name, null, waitFor(Duration.ZERO));
		CompletableFuture<Lease> waiting = this.template.tryAcquireAsync(this.name, null, waitFor(Duration.ofSeconds(20)));
		// the memory backend answers the first attempt before tryAcquireAsync returns
		assertThat(waiting).isNotDone();
		long releasedAt = System.nanoTime();
		held.close();
		Lease lease = waiting.get(10, TimeUnit.SECONDS);
		Duration wake = Duration.ofNanos(System.nanoTime() - releasedAt);
		assertThat(lease).isNotNull();
		assertThat(wake).as("wake-up after release, polling every 5s").isLessThan(Duration.ofSeconds(2));
		assertThat(lease.isValid()).isTrue();
		this.template.releaseAsync(lease).toCompletableFuture().get(5, TimeUnit.SECONDS);
		assertThat(this.template.heldLeases()).isEmpty();
		assertThat(this.other.tryAcquire(this.name, null, waitFor(Duration.ZERO))).isPresent().get().satisfies(Lease::close);
	}

	@Test
	void waiterGivesUpAfterItsWaitTime() throws Exception {
		try (Lease held = this.other.acquire(this.name, null, waitFor(Duration.ZERO))) {
			long start = System.nanoTime();
			Lease lease = this.template.tryAcquireAsync(this.name, null, waitFor(Duration.ofMillis(400)))
				.get(10, TimeUnit.SECONDS);
			assertThat(lease).isNull();
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isBetween(Duration.ofMillis(390),
					Duration.ofSeconds(3));
		}
	}

	@Test
	void cancelledWaiterLeavesNoLease() throws Exception {
		Lease held = this.other.acquire(this.name, null, waitFor(Duration.ZERO));
		CompletableFuture<Lease> waiting = this.template.tryAcquireAsync(this.name, null, waitFor(Duration.ofSeconds(20)));
		assertThat(waiting).isNotDone();
		waiting.cancel(false);
		held.close();
		await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
			assertThat(this.template.heldLeases()).isEmpty();
			assertThat(this.other.tryAcquire(this.name, null, waitFor(Duration.ZERO))).isPresent()
				.get()
				.satisfies(Lease::close);
		});
	}

	@Test
	void lockGrantedAfterTheCallerCancelledIsGivenBack() throws Exception {
		CompletableFuture<AcquireResult> answer = new CompletableFuture<>();
		SlowBackend slow = new SlowBackend(this.backend, answer);
		try (DefaultLockTemplate slowTemplate = new DefaultLockTemplate(slow, this.settings)) {
			CompletableFuture<Lease> acquiring = slowTemplate.tryAcquireAsync(this.name, null, waitFor(Duration.ZERO));
			acquiring.cancel(false);
			answer.complete(this.backend.tryAcquire(slowTemplate.keyFor(this.name, null), slow.owner, Duration.ofSeconds(30)));
			assertThat(slowTemplate.heldLeases()).isEmpty();
			assertThat(this.other.tryAcquire(this.name, null, waitFor(Duration.ZERO))).as("given back").isPresent()
				.get()
				.satisfies(Lease::close);
		}
	}

	@Test
	void backendFailureFailsTheAcquisitionWithLockBackendException() {
		CompletableFuture<AcquireResult> answer = CompletableFuture.failedFuture(new IllegalStateException("down"));
		try (DefaultLockTemplate failing = new DefaultLockTemplate(new SlowBackend(this.backend, answer), this.settings)) {
			assertThatExceptionOfType(ExecutionException.class)
				.isThrownBy(() -> failing.tryAcquireAsync(this.name, null, waitFor(Duration.ZERO)).get(5, TimeUnit.SECONDS))
				.satisfies((ex) -> assertThat(ex.getCause()).isInstanceOf(LockBackendException.class)
					.hasMessageContaining("down"));
		}
	}

	@Test
	void asyncLeaseIsRenewedWhileHeld() throws Exception {
		Lease lease = this.template
			.tryAcquireAsync(this.name, null, waitFor(Duration.ZERO).leaseTime(Duration.ofSeconds(1)))
			.get(5, TimeUnit.SECONDS);
		assertThat(this.other.tryAcquire(this.name, null, waitFor(Duration.ofMillis(2500))))
			.as("another client trying for over two TTLs").isEmpty();
		assertThat(lease.isValid()).isTrue();
		this.template.releaseAsync(lease).toCompletableFuture().get(5, TimeUnit.SECONDS);
		assertThat(lease.isValid()).isFalse();
	}

	@Test
	void asyncLeaseIsNotReenteredByTheThreadThatAcquiredIt() throws Exception {
		Lease lease = this.template.tryAcquireAsync(this.name, null, waitFor(Duration.ZERO)).get(5, TimeUnit.SECONDS);
		assertThat(this.template.tryAcquire(this.name, null, waitFor(Duration.ZERO))).isEmpty();
		lease.close();
	}

	/** The memory backend whose next asynchronous acquire answers with a stage the test controls. */
	@Test
	void waiterPollsOnceTheBackendStopsAnnouncingReleases() throws Exception {
		LosingBackend losing = new LosingBackend();
		DefaultLockTemplate waiting = new DefaultLockTemplate(losing, this.settings);
		DefaultLockTemplate holding = new DefaultLockTemplate(losing, this.settings);
		try {
			Lease held = holding.acquire(this.name, null, waitFor(Duration.ZERO));
			CompletableFuture<Lease> acquiring = waiting.tryAcquireAsync(this.name, null,
					waitFor(Duration.ofSeconds(20)));
			// Asleep for its first pause: with release events, 2.5-5 s.
			Thread.sleep(300);
			losing.lose();
			Thread.sleep(100);
			long releasedAt = System.nanoTime();
			held.close();
			Lease lease = acquiring.get(10, TimeUnit.SECONDS);
			assertThat(Duration.ofNanos(System.nanoTime() - releasedAt))
				.as("polling with short pauses once the subscription was lost, not the 5 s poll")
				.isLessThan(Duration.ofSeconds(1));
			lease.close();
		}
		finally {
			waiting.close();
			holding.close();
		}
	}

	/** Delivers no release events; {@link #lose()} stops announcing and tells the subscribers. */
	static class LosingBackend extends InMemoryLockBackend {

		private final List<Runnable> interruptions = new CopyOnWriteArrayList<>();

		private volatile boolean announcing = true;

		@Override
		public AutoCloseable subscribe(Consumer<String> listener) {
			return () -> {
			};
		}

		@Override
		public AutoCloseable subscribe(Consumer<String> listener, Runnable onInterrupted) {
			this.interruptions.add(onInterrupted);
			return () -> this.interruptions.remove(onInterrupted);
		}

		@Override
		public boolean announcesReleases() {
			return this.announcing;
		}

		void lose() {
			this.announcing = false;
			this.interruptions.forEach(Runnable::run);
		}

	}

	static class SlowBackend extends InMemoryLockBackend implements AsyncLockBackend {

		private final InMemoryLockBackend delegate;

		private final CompletableFuture<AcquireResult> answer;

		volatile String owner;

		SlowBackend(InMemoryLockBackend delegate, CompletableFuture<AcquireResult> answer) {
			this.delegate = delegate;
			this.answer = answer;
		}

		@Override
		public CompletionStage<AcquireResult> tryAcquireAsync(String key, String owner, Duration ttl) {
			this.owner = owner;
			return this.answer;
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
		public CompletionStage<Boolean> releaseAsync(String key, String owner) {
			return this.delegate.releaseAsync(key, owner);
		}

	}

}
