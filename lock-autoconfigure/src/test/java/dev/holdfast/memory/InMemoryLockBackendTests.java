package dev.holdfast.memory;

import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.Test;

import dev.holdfast.spi.TickClaims.TickClaim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The in-memory backend's own promises: its maps stay bounded. The shared contracts run in
 * holdfast-test's {@code InMemoryContractTests}.
 */
class InMemoryLockBackendTests {

	@Test
	void aJobKeepsOneTickRecordAndExpiredRecordsAreSwept() {
		InMemoryLockBackend backend = new InMemoryLockBackend();
		Instant tick = Instant.parse("2030-01-01T00:00:00Z");
		for (int i = 0; i < 3000; i++) {
			assertThat(claim(backend, "job", tick.plusSeconds(i), Duration.ofSeconds(10))).isTrue();
		}
		assertThat(backend.tickRecords()).isOne();
		assertThat(backend.size()).as("locks").isZero();
		for (int i = 0; i < 1000; i++) {
			claim(backend, "gone" + i, tick, Duration.ofMillis(1));
		}
		await().atMost(Duration.ofSeconds(1)).until(() -> claim(backend, "gone999", tick, Duration.ofMillis(1)));
		for (int i = 0; i < 100; i++) {
			claim(backend, "job", tick.plusSeconds(5000 + i), Duration.ofSeconds(10));
		}
		assertThat(backend.tickRecords()).isLessThan(100);
		assertThat(claim(backend, "job", tick.plusSeconds(5000), Duration.ofSeconds(10))).isFalse();
	}

	/** A claim whose tick is always due: this test is about the records, not the clock. */
	private static boolean claim(InMemoryLockBackend backend, String key, Instant tick, Duration ttl) {
		return backend.claimTick(key, tick, Duration.ofDays(3650), ttl).outcome() == TickClaim.Outcome.CLAIMED;
	}

	@Test
	void expiredLocksAreSweptSoMemoryStaysBounded() throws Exception {
		InMemoryLockBackend backend = new InMemoryLockBackend();
		for (int i = 0; i < 1000; i++) {
			backend.tryAcquire("k" + i, "o", Duration.ofMillis(1));
		}
		// the last of them has expired once another owner can take it
		await().atMost(Duration.ofSeconds(1)).until(() -> backend.tryAcquire("k999", "probe", Duration.ofMillis(1)).acquired());
		for (int i = 0; i < 100; i++) {
			backend.tryAcquire("fresh" + i, "o", Duration.ofSeconds(10));
		}
		assertThat(backend.size()).isLessThan(200);
	}

}
