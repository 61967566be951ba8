package dev.holdfast.memory;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import dev.holdfast.core.LockBackendContractTests;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The contract on the in-memory backend. Independent "clients" share one backend instance, as
 * the threads of one JVM do.
 */
class InMemoryLockBackendTests extends LockBackendContractTests {

	private final InMemoryLockBackend shared = new InMemoryLockBackend();

	@Override
	protected LockBackend newBackend() {
		return this.shared;
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
