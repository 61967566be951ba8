package dev.holdfast.memory;

import java.time.Duration;
import java.time.Instant;

import org.junit.jupiter.api.Test;

import dev.holdfast.core.LockBackendContractTests;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims;
import dev.holdfast.spi.TickClaimsContractTests;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The contracts of locks and tick claims on the in-memory backend. Independent "clients" share
 * one backend instance, as the threads of one JVM do.
 */
class InMemoryLockBackendTests extends LockBackendContractTests implements TickClaimsContractTests {

	private final InMemoryLockBackend shared = new InMemoryLockBackend();

	@Override
	protected LockBackend newBackend() {
		return this.shared;
	}

	@Override
	public TickClaims newClaimsClient() {
		return this.shared;
	}

	@Test
	void aJobKeepsOneTickRecordAndExpiredRecordsAreSwept() {
		InMemoryLockBackend backend = new InMemoryLockBackend();
		Instant tick = Instant.parse("2030-01-01T00:00:00Z");
		for (int i = 0; i < 3000; i++) {
			assertThat(backend.claimTick("job", tick.plusSeconds(i), Duration.ofSeconds(10))).isTrue();
		}
		assertThat(backend.tickRecords()).isOne();
		assertThat(backend.size()).as("locks").isZero();
		for (int i = 0; i < 1000; i++) {
			backend.claimTick("gone" + i, tick, Duration.ofMillis(1));
		}
		await().atMost(Duration.ofSeconds(1)).until(() -> backend.claimTick("gone999", tick, Duration.ofMillis(1)));
		for (int i = 0; i < 100; i++) {
			backend.claimTick("job", tick.plusSeconds(5000 + i), Duration.ofSeconds(10));
		}
		assertThat(backend.tickRecords()).isLessThan(100);
		assertThat(backend.claimTick("job", tick.plusSeconds(5000), Duration.ofSeconds(10))).isFalse();
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
