package dev.holdfast.zookeeper;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.KeeperException;

import dev.holdfast.spi.BackendHealth.Check;

/**
 * The health check of a backend: whether its client is connected and the base path can be read
 * within the connection timeout, with the connect string, the connection state and the session
 * id as details.
 */
final class ZooKeeperHealth {

	private final ZooKeeperLockBackend backend;

	private final CuratorFramework client;

	private final ZooKeeperSession session;

	/** The base path, empty for the root. */
	private final String basePath;

	private final long connectionTimeoutMillis;

	ZooKeeperHealth(ZooKeeperLockBackend backend, ZooKeeperSession session, String basePath,
			long connectionTimeoutMillis) {
		this.backend = backend;
		this.client = backend.client();
		this.session = session;
		this.basePath = basePath;
		this.connectionTimeoutMillis = connectionTimeoutMillis;
	}

	Check check() {
		Map<String, Object> details = new HashMap<>();
		details.put("connectString", this.client.getZookeeperClient().getCurrentConnectionString());
		details.put("state", this.session.state());
		if (!this.client.getZookeeperClient().isConnected()) {
			return Check.down(details);
		}
		CompletableFuture<Integer> answer = new CompletableFuture<>();
		long sent = System.nanoTime();
		try {
			this.client.checkExists()
				.inBackground((client, event) -> answer.complete(event.getResultCode()))
				.forPath(this.basePath.isEmpty() ? "/" : this.basePath);
			details.put("sessionId", "0x" + Long.toHexString(this.client.getZookeeperClient().getZooKeeper().getSessionId()));
		}
		catch (Exception ex) {
			throw this.backend.failure("check the health of", this.basePath, ex);
		}
		long deadline = sent + TimeUnit.MILLISECONDS.toNanos(this.connectionTimeoutMillis);
		int code = this.backend.awaitUninterruptibly(answer, sent, deadline, "check the health of", this.basePath);
		boolean up = code == KeeperException.Code.OK.intValue() || code == KeeperException.Code.NONODE.intValue();
		return up ? Check.up(details) : Check.down(details);
	}

}
