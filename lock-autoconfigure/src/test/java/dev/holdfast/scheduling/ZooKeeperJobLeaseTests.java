package dev.holdfast.scheduling;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.test.server.ZooKeeperServer;

/**
 * Job leases on one in-process ZooKeeper server, each context with its own Curator client.
 */
class ZooKeeperJobLeaseTests extends AbstractJobLeaseTests {

	private static ZooKeeperServer server;

	@BeforeAll
	static void startServer() throws Exception {
		server = ZooKeeperServer.start();
	}

	@AfterAll
	static void stopServer() throws Exception {
		server.close();
	}

	@Override
	protected ApplicationContextRunner runner() {
		return new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
			.withPropertyValues("holdfast.zookeeper.connect-string=" + server.connectString(),
					"holdfast.backend=zookeeper");
	}

	@Override
	protected String expectedBackend() {
		return "zookeeper";
	}

}
