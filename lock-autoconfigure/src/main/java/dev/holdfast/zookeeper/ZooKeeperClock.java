package dev.holdfast.zookeeper;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.KeeperException.Code;

/**
 * The ensemble's time now: the {@code mtime} it stamps on a write to {@code <base>/clock}, a node
 * outside every lock's parent that nobody watches (tick claims, and a refused attempt's judgment
 * of the holder: ZK-10). Created on first use; one request, two after a create.
 */
final class ZooKeeperClock {

	private static final byte[] EMPTY = new byte[0];

	private final ZooKeeperLockBackend backend;

	private final CuratorFramework client;

	private final String path;

	ZooKeeperClock(ZooKeeperLockBackend backend) {
		this.backend = backend;
		this.client = backend.client();
		this.path = backend.path("clock");
	}

	/**
	 * Writes the clock node, answered by {@code deadline} or fails as the backend's requests do.
	 * @return the time the ensemble stamped on the write, in epoch milliseconds
	 */
	long stamp(String operation, String key, long deadline) throws InterruptedException {
		CuratorEvent event = write(operation, key, deadline);
		if (event.getResultCode() == Code.NONODE.intValue()) {
			CuratorEvent created = this.backend.request(operation, key, deadline, (callback) -> this.client.create()
				.creatingParentContainersIfNeeded()
				.inBackground(callback)
				.forPath(this.path, EMPTY));
			int code = created.getResultCode();
			if (code != Code.OK.intValue() && code != Code.NODEEXISTS.intValue()) {
				throw this.backend.failure(operation, key, created);
			}
			event = write(operation, key, deadline);
		}
		if (event.getResultCode() != Code.OK.intValue()) {
			throw this.backend.failure(operation, key, event);
		}
		return event.getStat().getMtime();
	}

	private CuratorEvent write(String operation, String key, long deadline) throws InterruptedException {
		return this.backend.request(operation, key, deadline,
				(callback) -> this.client.setData().inBackground(callback).forPath(this.path, EMPTY));
	}

}
