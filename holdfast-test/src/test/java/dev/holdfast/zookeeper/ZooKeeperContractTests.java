package dev.holdfast.zookeeper;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import dev.holdfast.LockTemplate;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims;
import dev.holdfast.test.ClusterLocksContractTests;
import dev.holdfast.test.LeadershipContractTests;
import dev.holdfast.test.LockBackendContractTests;
import dev.holdfast.test.TickClaimsContractTests;
import dev.holdfast.test.server.ZooKeeperServer;

/**
 * The backend and tick-claim contracts on one ZooKeeper server. Every backend has its own
 * Curator client (its own session), as another process would.
 */
class ZooKeeperContractTests extends LockBackendContractTests
		implements TickClaimsContractTests, ClusterLocksContractTests, LeadershipContractTests {

	private static ZooKeeperServer server;

	/** Tick-claim clients, which the lock contract does not track: closed with the class. */
	private static final List<ZooKeeperLockBackend> claimClients = new ArrayList<>();

	@BeforeAll
	static void startServer() {
		server = ZooKeeperServer.start();
	}

	@AfterAll
	static void stopServer() {
		claimClients.forEach(ZooKeeperLockBackend::close);
		claimClients.clear();
		server.close();
	}

	@Override
	protected LockBackend newBackend() {
		return ZooKeeperTestClients.backend(server);
	}

	@Override
	public TickClaims newClaimsClient() {
		ZooKeeperLockBackend client = ZooKeeperTestClients.backend(server);
		claimClients.add(client);
		return client;
	}

	@Override
	public LockBackend newClusterClient() {
		return trackBackend(newBackend());
	}

	@Override
	public boolean readsTickRecords() {
		return false;
	}

	@Override
	public LockBackend newLeadershipClient() {
		return trackBackend(newBackend());
	}

	/**
	 * A crash that ZooKeeper does not see: the engine stops, releasing nothing, and its client keeps
	 * its session until the test ends (as a frozen process's would until the session timeout), so the
	 * crashed holder's nodes stay and must be judged expired by their time to live, not deleted with a
	 * closed session. Closing the engine again after the test does nothing more.
	 */
	@Override
	public void crash(LockTemplate instance) {
		((DefaultLockTemplate) instance).close();
	}

	/** No SharedLocks on this branch: READ is refused naming the backend (RWL-9); true once it gives read holds. */
	@Override
	public boolean expectsReadHolds() {
		return true;
	}

}
