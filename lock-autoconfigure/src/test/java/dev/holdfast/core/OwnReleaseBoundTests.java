package dev.holdfast.core;

import java.time.Duration;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;

/**
 * A release that is never answered does not hold a later acquisition of the same key from this
 * process past the released lease's expiry (before: the blocking path waited up to its own new TTL, an
 * hour here; the non-blocking one for ever).
 */
class OwnReleaseBoundTests {

	private final BackgroundReleaseTests.HeldReleases backend = new BackgroundReleaseTests.HeldReleases();

	private final DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults());

	private final String name = "bound-" + UUID.randomUUID();

	@AfterEach
	void close() {
		this.backend.answerAll();
		this.template.close();
	}

	@Test
	void blockingTryOnceIsNotHeldLongerThanTheReleasedLeaseLives() throws Exception {
		// A short lease, released in the background; its release is never answered.
		this.template.acquire(this.name, null, LockOptions.defaults().leaseTime(Duration.ofSeconds(1)).renew(false)).close();
		// A try-once acquisition asking for a long lease: its bound is its own TTL (1 h), not the released one's.
		CompletableFuture<Optional<Lease>> next = CompletableFuture.supplyAsync(() -> this.template.tryAcquire(this.name,
				null, LockOptions.defaults().waitTime(Duration.ZERO).leaseTime(Duration.ofHours(1)).renew(false)));
		// completes (acquired or not: the backend's copy may outlive the lease's own estimate by the
		// drift allowance) once the released lease expired
		Optional<Lease> lease = next.get(5, TimeUnit.SECONDS);
		lease.ifPresent(Lease::close);
	}

	@Test
	void nonBlockingTryOnceCompletesWhenTheReleasedLeaseExpired() throws Exception {
		this.template.acquire(this.name, null, LockOptions.defaults().leaseTime(Duration.ofSeconds(1)).renew(false)).close();
		CompletableFuture<Lease> next = this.template.tryAcquireAsync(this.name, null,
				LockOptions.defaults().waitTime(Duration.ZERO));
		// completes (acquired or not) once the released lease expired
		next.get(5, TimeUnit.SECONDS);
	}

}
