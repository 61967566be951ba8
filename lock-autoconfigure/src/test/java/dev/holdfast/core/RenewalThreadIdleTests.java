package dev.holdfast.core;

import java.time.Duration;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The template's timer exists only while renewals are scheduled, and the worker that makes the
 * renewal calls of a backend that blocks (memory here) only while they are made: both end about
 * 1 s after the last renewable lease was released (an application whose job runs now and then
 * keeps no idle thread), and a later lease is renewed again by new ones (REN-1).
 */
class RenewalThreadIdleTests {

	@Test
	void theRenewalThreadEndsWhenNoLeaseIsHeldAndComesBackForTheNext() {
		String backendName = "idle-" + UUID.randomUUID();
		InMemoryLockBackend backend = new InMemoryLockBackend() {
			@Override
			public String name() {
				return backendName;
			}
		};
		try (DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults())) {
			LockOptions shortLease = LockOptions.defaults().leaseTime(Duration.ofMillis(300));
			try (Lease lease = template.acquire("renewed", null, shortLease)) {
				await().atMost(Duration.ofSeconds(2))
					.until(() -> threads("holdfast-timer-" + backendName) == 1 && threads("holdfast-renewal-" + backendName) == 1);
				await().pollDelay(Duration.ofMillis(700)).until(() -> true);
				assertThat(lease.isValid()).as("renewed past two lease times").isTrue();
			}
			await().atMost(Duration.ofSeconds(5))
				.until(() -> threads("holdfast-timer-" + backendName) == 0 && threads("holdfast-renewal-" + backendName) == 0);
			try (Lease lease = template.acquire("renewed-again", null, shortLease)) {
				await().pollDelay(Duration.ofMillis(700)).until(() -> true);
				assertThat(lease.isValid()).as("a later lease is renewed by a new thread").isTrue();
				assertThat(threads("holdfast-timer-" + backendName)).isEqualTo(1);
				assertThat(threads("holdfast-renewal-" + backendName)).isEqualTo(1);
			}
		}
	}

	private static long threads(String name) {
		return Thread.getAllStackTraces().keySet().stream()
			.filter((thread) -> thread.getName().equals(name) && thread.isAlive())
			.count();
	}

}
