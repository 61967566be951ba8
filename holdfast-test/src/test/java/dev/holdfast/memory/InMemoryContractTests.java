package dev.holdfast.memory;

import java.time.Duration;

import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims;
import dev.holdfast.test.ClusterLocksContractTests;
import dev.holdfast.test.LeadershipContractTests;
import dev.holdfast.test.LockBackendContractTests;
import dev.holdfast.test.TickClaimsContractTests;

/**
 * The contracts of locks and tick claims on the in-memory backend. Independent "clients" share
 * one backend instance, as the threads of one JVM do.
 */
class InMemoryContractTests extends LockBackendContractTests
		implements TickClaimsContractTests, ClusterLocksContractTests, LeadershipContractTests {

	private final InMemoryLockBackend shared = new InMemoryLockBackend();

	@Override
	protected LockBackend newBackend() {
		return this.shared;
	}

	/** The transfers of several keys run their full time here, the cheapest backend. */
	@Override
	public Duration transfersRunFor() {
		return TRANSFERS_RUN_FOR;
	}

	@Override
	public boolean expectsReadHolds() {
		return true;
	}

	@Override
	public TickClaims newClaimsClient() {
		return this.shared;
	}

	@Override
	public LockBackend newClusterClient() {
		return this.shared;
	}

	@Override
	public LockBackend newLeadershipClient() {
		return trackBackend(newBackend());
	}

	@Override
	public boolean wakesOnAnotherSlotsRelease() {
		return true;
	}

}
