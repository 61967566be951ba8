package dev.holdfast.zookeeper;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.ZooKeeper;
import org.awaitility.Awaitility;

/**
 * Curator clients for tests: short timeouts, started and connected.
 */
public final class ZooKeeperClients {

	private ZooKeeperClients() {
	}

	/** A started client of {@code connectString}, connected within 10 s. */
	public static CuratorFramework connect(String connectString) {
		return connect(connectString, Duration.ofSeconds(10), Duration.ofSeconds(3));
	}

	public static CuratorFramework connect(String connectString, Duration sessionTimeout, Duration connectionTimeout) {
		CuratorFramework client = CuratorFrameworkFactory.builder()
			.connectString(connectString)
			.sessionTimeoutMs((int) sessionTimeout.toMillis())
			.connectionTimeoutMs((int) connectionTimeout.toMillis())
			.retryPolicy(new ExponentialBackoffRetry(100, 3, 1000))
			.build();
		client.start();
		try {
			if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
				client.close();
				throw new IllegalStateException("Could not connect to ZooKeeper at " + connectString);
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			client.close();
			throw new IllegalStateException(ex);
		}
		return client;
	}

	/** Ends the client's session on the server, which deletes its nodes, as an expiry would. */
	public static void expireSession(CuratorFramework client, String connectString) throws Exception {
		ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
		// Another handle on the same session closes it on the server.
		ZooKeeper twin = new ZooKeeper(connectString, 10_000, (event) -> {
		}, zk.getSessionId(), zk.getSessionPasswd());
		try {
			Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> twin.getState().isConnected());
		}
		finally {
			twin.close();
		}
	}

	/** A backend on its own new client, which it closes. */
	public static ZooKeeperLockBackend backend(String connectString) {
		return ZooKeeperLockBackend.owning(connect(connectString), ZooKeeperLockBackend.DEFAULT_BASE_PATH);
	}

}
