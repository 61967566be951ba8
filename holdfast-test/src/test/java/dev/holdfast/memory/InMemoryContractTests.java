package dev.holdfast.memory;

import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims;
import dev.holdfast.test.LeadershipContractTests;
import dev.holdfast.test.LockBackendContractTests;
import dev.holdfast.test.TickClaimsContractTests;

/**
 * The contracts of locks and tick claims on the in-memory backend. Independent "clients" share
 * one backend instance, as the threads of one JVM do.
 */
class InMemoryContractTests extends LockBackendContractTests
		implements TickClaimsContractTests, LeadershipContractTests {

	private final InMemoryLockBackend shared = new InMemoryLockBackend();

	@Override
	protected LockBackend newBackend() {
		return this.shared;
	}

	@Override
	public TickClaims newClaimsClient() {
		return this.shared;
	}

	@Override
	public LockBackend newLeadershipClient() {
		return trackBackend(newBackend());
	}

}
