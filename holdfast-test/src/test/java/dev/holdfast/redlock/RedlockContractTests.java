package dev.holdfast.redlock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.LeadershipContractTests;
import dev.holdfast.test.LockBackendContractTests;
import dev.holdfast.test.server.RedisServer;

/**
 * The backend contract on Redlock over five real redis-server processes shared by the class. Not
 * {@code TickClaimsContractTests}: claimers racing for one tick can split the nodes so that none
 * has a quorum, and then nobody wins the tick (the SPI promises at most one winner; that contract
 * also asks for at least one). {@code RedlockLockBackendTests} covers Redlock's tick claims.
 */
class RedlockContractTests extends LockBackendContractTests implements LeadershipContractTests {

	private static final List<RedisServer> servers = new ArrayList<>();

	/** Redlock refuses read holds (RWL-9, decision 0024): the kit checks that it says so, naming itself. */
	@Override
	public Boolean expectsReadHolds() {
		return false;
	}

	@BeforeAll
	static void startServers() {
		for (int i = 0; i < 5; i++) {
			servers.add(RedisServer.start());
		}
	}

	@AfterAll
	static void stopServers() {
		servers.forEach(RedisServer::close);
		servers.clear();
	}

	@Override
	protected LockBackend newBackend() {
		return RedlockLockBackend.connect(servers.stream().map(RedisServer::uri).toList(), null, null,
				Duration.ofSeconds(1), new RedlockSettings(Duration.ofMillis(500), 0.01, Duration.ofMillis(2)));
	}

	@Override
	public LockBackend newLeadershipClient() {
		return trackBackend(newBackend());
	}

}
