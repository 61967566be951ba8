package dev.holdfast.core;

import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Releases sent in the background, over a backend whose releases are answered only when the
 * test says so and whose requests are not ordered (as on a database, or independent connections):
 * a later acquisition of the key from this process waits for its own release instead of finding
 * the lock held. The Redis side (ordered requests, failures, shutdown) is in
 * {@code RedisBackgroundReleaseTests}.
 */
class BackgroundReleaseTests {

	private final HeldReleases backend = new HeldReleases();

	private final DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults());

	private final String name = "background-" + UUID.randomUUID();

	@AfterEach
	void close() {
		this.backend.answerAll();
		this.template.close();
	}

	@Test
	void closeReturnsBeforeTheBackendAnsweredAndReleaseAsyncCompletesWhenItHas() throws Exception {
		Lease first = this.template.acquire(this.name, null, LockOptions.defaults());
		first.close();
		assertThat(this.template.releasesInFlight()).isEqualTo(1);
		assertThat(this.template.heldLeases()).isEmpty();
		Lease second = this.template.acquire(this.name, "other", LockOptions.defaults());
		CompletionStage<Void> released = this.template.releaseAsync(second);
		assertThat(released.toCompletableFuture()).isNotDone();
		this.backend.answerAll();
		released.toCompletableFuture().get(5, TimeUnit.SECONDS);
		assertThat(this.template.releasesInFlight()).isZero();
	}

	@Test
	void acquisitionThatFindsTheLockHeldByItsOwnReleaseInFlightWaitsForItInsteadOfFailing() throws Exception {
		this.template.acquire(this.name, null, LockOptions.defaults()).close();
		// Not ordered behind the release: the backend still holds the lock when this one asks.
		CompletableFuture<Optional<Lease>> next = CompletableFuture
			.supplyAsync(() -> this.template.tryAcquire(this.name, null, LockOptions.defaults()));
		// its attempt found the lock held by the unanswered release
		await().atMost(Duration.ofSeconds(5)).until(() -> this.backend.attempts.get() >= 2);
		assertThat(next).as("waits for the release in flight, not 'held'").isNotDone();
		this.backend.answerAll();
		Optional<Lease> lease = next.get(5, TimeUnit.SECONDS);
		assertThat(lease).isPresent();
		lease.get().close();
	}

	@Test
	void nonBlockingAcquisitionThatFindsItsOwnReleaseInFlightTriesAgainWhenItIsAnswered() throws Exception {
		this.template.acquire(this.name, null, LockOptions.defaults()).close();
		CompletableFuture<Lease> next = this.template.tryAcquireAsync(this.name, null, LockOptions.defaults());
		await().atMost(Duration.ofSeconds(5)).until(() -> this.backend.attempts.get() >= 2);
		assertThat(next).isNotDone();
		this.backend.answerAll();
		Lease lease = next.get(5, TimeUnit.SECONDS);
		assertThat(lease).isNotNull();
		lease.close();
	}

	@Test
	void tryOnceThatRanBeforeItsOwnReleaseAndIsAnsweredAfterItTriesAgain() {
		this.template.acquire(this.name, null, LockOptions.defaults()).close();
		// The backend ran the attempt first (held), then answered the release, then the attempt:
		// by the time the attempt's answer is looked at, the release is no longer in flight.
		this.backend.answerReleasesAfterAttempt = true;
		Optional<Lease> lease = this.template.tryAcquire(this.name, null, LockOptions.defaults());
		assertThat(lease).as("tried again after its own release").isPresent();
		assertThat(this.backend.attempts.get()).isEqualTo(3);
		lease.get().close();
	}

	@Test
	void nonBlockingTryOnceThatRanBeforeItsOwnReleaseAndIsAnsweredAfterItTriesAgain() throws Exception {
		this.template.acquire(this.name, null, LockOptions.defaults()).close();
		this.backend.answerReleasesAfterAttempt = true;
		Lease lease = this.template.tryAcquireAsync(this.name, null, LockOptions.defaults()).get(5, TimeUnit.SECONDS);
		assertThat(lease).as("tried again after its own release").isNotNull();
		assertThat(this.backend.attempts.get()).isEqualTo(3);
		lease.close();
	}

	@Test
	void tryOnceWithoutOwnReleaseInFlightFindingTheLockHeldFailsAtOnce() throws Exception {
		this.backend.delegate.tryAcquire(this.template.keyFor(this.name, null), "another-process", Duration.ofMinutes(1));
		this.backend.answerReleasesAfterAttempt = true;
		assertThat(this.template.tryAcquire(this.name, null, LockOptions.defaults())).isEmpty();
		assertThat(this.template.tryAcquireAsync(this.name, null, LockOptions.defaults()).get(5, TimeUnit.SECONDS))
			.isNull();
		assertThat(this.backend.attempts.get()).as("one attempt each, no retry").isEqualTo(2);
	}

	@Test
	void withTheBackgroundOffCloseWaitsForTheAnswer() throws Exception {
		try (DefaultLockTemplate synchronous = new DefaultLockTemplate(this.backend,
				LockSettings.defaults().withReleaseInBackground(false))) {
			Lease lease = synchronous.acquire(this.name, null, LockOptions.defaults());
			CompletableFuture<Void> closing = CompletableFuture.runAsync(lease::close);
			// the release is sent and close() waits for its answer
			await().atMost(Duration.ofSeconds(5)).until(() -> !this.backend.pending.isEmpty());
			assertThat(closing).isNotDone();
			this.backend.answerAll();
			closing.get(5, TimeUnit.SECONDS);
		}
	}

	@Test
	void closingTheTemplateWaitsForReleasesInFlight() throws Exception {
		this.template.acquire(this.name, null, LockOptions.defaults()).close();
		CompletableFuture<Void> closing = CompletableFuture.runAsync(this.template::close);
		// close() has begun (it refuses new locks first) and waits for the release in flight
		await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThatExceptionOfType(LockBackendException.class)
			.isThrownBy(() -> this.template.acquire(this.name + "-other", null, LockOptions.defaults())));
		assertThat(closing).isNotDone();
		this.backend.answerAll();
		closing.get(5, TimeUnit.SECONDS);
		assertThat(this.backend.delegate.size()).isZero();
	}

	/** Memory locks whose releases (blocking or not) run only when the test answers them. */
	static final class HeldReleases implements AsyncLockBackend {

		final InMemoryLockBackend delegate = new InMemoryLockBackend();

		final LinkedBlockingQueue<Runnable> pending = new LinkedBlockingQueue<>();

		/** Acquisition attempts, blocking and non-blocking. */
		final AtomicInteger attempts = new AtomicInteger();

		/**
		 * Whether each attempt, once run, answers the pending releases before its own answer is
		 * returned (Redis running an acquisition before a release that was sent earlier, as after
		 * a {@code NOSCRIPT} retry of the release).
		 */
		volatile boolean answerReleasesAfterAttempt;

		@Override
		public String name() {
			return "held-releases";
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			this.attempts.incrementAndGet();
			AcquireResult result = this.delegate.tryAcquire(key, owner, ttl);
			if (this.answerReleasesAfterAttempt) {
				answerAll();
			}
			return result;
		}

		@Override
		public boolean release(String key, String owner) {
			return releaseAsync(key, owner).toCompletableFuture().join();
		}

		@Override
		public CompletionStage<AcquireResult> tryAcquireAsync(String key, String owner, Duration ttl) {
			this.attempts.incrementAndGet();
			CompletionStage<AcquireResult> result = this.delegate.tryAcquireAsync(key, owner, ttl);
			if (this.answerReleasesAfterAttempt) {
				answerAll();
			}
			return result;
		}

		@Override
		public CompletionStage<Boolean> releaseAsync(String key, String owner) {
			CompletableFuture<Boolean> answer = new CompletableFuture<>();
			this.pending.add(() -> answer.complete(this.delegate.release(key, owner)));
			return answer;
		}

		void answerAll() {
			Runnable release;
			while ((release = this.pending.poll()) != null) {
				release.run();
			}
		}

	}

}
