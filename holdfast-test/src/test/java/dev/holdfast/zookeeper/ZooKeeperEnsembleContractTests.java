package dev.holdfast.zookeeper;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.LeadershipContractTests;
import dev.holdfast.test.LockBackendContractTests;
import dev.holdfast.test.server.ZooKeeperServer;

/**
 * The backend contract on a three-server ensemble: each client connects to any of the servers,
 * so that holders and waiters talk to different servers and reads may come from followers.
 */
class ZooKeeperEnsembleContractTests extends LockBackendContractTests implements LeadershipContractTests {

	private static ZooKeeperServer ensemble;

	@BeforeAll
	static void startEnsemble() {
		ensemble = ZooKeeperServer.startEnsemble(3);
	}

	@AfterAll
	static void stopEnsemble() {
		ensemble.close();
	}

	@Override
	protected LockBackend newBackend() {
		return ZooKeeperTestClients.backend(ensemble);
	}

	@Override
	public LockBackend newLeadershipClient() {
		return trackBackend(newBackend());
	}

	/** No SharedLocks on this branch: READ is refused naming the backend (RWL-9); true once it gives read holds. */
	@Override
	public boolean expectsReadHolds() {
		return true;
	}

}
