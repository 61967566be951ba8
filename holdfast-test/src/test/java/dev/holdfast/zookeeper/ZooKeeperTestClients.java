package dev.holdfast.zookeeper;

import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;

import dev.holdfast.test.server.ZooKeeperServer;

/**
 * Independent Curator clients of a test's ZooKeeper, as separate processes would have: each
 * backend has its own client and session (10 s), and waits at most 3 s for a connection.
 */
final class ZooKeeperTestClients {

	private ZooKeeperTestClients() {
	}

	/** A backend on a new client of {@code server}, which it closes when it is closed. */
	static ZooKeeperLockBackend backend(ZooKeeperServer server) {
		CuratorFramework client = CuratorFrameworkFactory.builder()
			.connectString(server.connectString())
			.sessionTimeoutMs(10_000)
			.connectionTimeoutMs(3_000)
			.retryPolicy(new ExponentialBackoffRetry(100, 3, 1000))
			.build();
		client.start();
		try {
			if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
				client.close();
				throw new IllegalStateException("Could not connect to ZooKeeper at " + server.connectString());
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			client.close();
			throw new IllegalStateException(ex);
		}
		return ZooKeeperLockBackend.owning(client, ZooKeeperLockBackend.DEFAULT_BASE_PATH);
	}

}
