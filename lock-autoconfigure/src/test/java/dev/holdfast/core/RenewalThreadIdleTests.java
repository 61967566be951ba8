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
 * The renewal thread exists only while renewals are scheduled: it ends about 1 s after the last
 * renewable lease was released (an application whose job runs now and then keeps no idle thread),
 * and a later lease is renewed again by a new one.
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
				await().atMost(Duration.ofSeconds(2)).until(() -> renewalThreads(backendName) == 1);
				await().pollDelay(Duration.ofMillis(700)).until(() -> true);
				assertThat(lease.isValid()).as("renewed past two lease times").isTrue();
			}
			await().atMost(Duration.ofSeconds(5)).until(() -> renewalThreads(backendName) == 0);
			try (Lease lease = template.acquire("renewed-again", null, shortLease)) {
				await().pollDelay(Duration.ofMillis(700)).until(() -> true);
				assertThat(lease.isValid()).as("a later lease is renewed by a new thread").isTrue();
				assertThat(renewalThreads(backendName)).isEqualTo(1);
			}
		}
	}

	private static long renewalThreads(String backendName) {
		return Thread.getAllStackTraces().keySet().stream()
			.filter((thread) -> thread.getName().equals("holdfast-renewal-" + backendName) && thread.isAlive())
			.count();
	}

}
