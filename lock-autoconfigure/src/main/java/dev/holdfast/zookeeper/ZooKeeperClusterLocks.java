package dev.holdfast.zookeeper;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.ClusterLocks.BackendLock;
import dev.holdfast.spi.ClusterLocks.Listing;

/**
 * The locks of every instance, for operators (see {@link ZooKeeperLockBackend#listLocks}): the
 * children of {@code <base>/locks} whose key starts with the prefix, and of each the node with the
 * lowest sequence, the holder, whose data names its instance (of a read-held key, its readers: RWL-45);
 * and the forced release, which deletes the holder's node (the waiter behind it, if any, takes the
 * lock with a later node).
 * Operator calls, not a lock's path: plain Curator calls, refused at once while disconnected.
 */
final class ZooKeeperClusterLocks {

	private final ZooKeeperLockBackend backend;

	ZooKeeperClusterLocks(ZooKeeperLockBackend backend) {
		this.backend = backend;
	}

	Listing listLocks(String prefix, int max) {
		CuratorFramework client = connectedClient("list locks");
		String locks = this.backend.path("locks");
		String encodedPrefix = ZooKeeperPaths.encode(prefix);
		try {
			if (client.checkExists().forPath(locks) == null) {
				return new Listing(List.of(), true);
			}
			List<String> parents = client.getChildren()
				.forPath(locks)
				.stream()
				.filter((name) -> name.startsWith(encodedPrefix))
				.sorted()
				.toList();
			List<BackendLock> found = new ArrayList<>();
			boolean complete = true;
			for (String parent : parents) {
				if (found.size() == max) {
					complete = false;
					break;
				}
				BackendLock lock = holder(client, locks + "/" + parent, decode(parent));
				if (lock != null) {
					found.add(lock);
				}
			}
			return new Listing(found, complete);
		}
		catch (Exception ex) {
			throw new LockBackendException("The zookeeper backend could not list the locks under '" + prefix + "': "
					+ ex.getMessage(), ex);
		}
	}

	/** The holder of one key: the children of its parent alone, and the lowest one's data. */
	@Nullable BackendLock lock(String key) {
		CuratorFramework client = connectedClient("read a lock");
		try {
			return holder(client, this.backend.path("locks") + "/" + ZooKeeperPaths.encode(key), key);
		}
		catch (Exception ex) {
			throw new LockBackendException("The zookeeper backend could not read lock '" + key + "': "
					+ ex.getMessage(), ex);
		}
	}

	boolean forceRelease(String key, @Nullable Long fencingToken) {
		CuratorFramework client = connectedClient("release by force");
		String parent = this.backend.path("locks") + "/" + ZooKeeperPaths.encode(key);
		try {
			boolean released = false;
			boolean survived = false;
			// The holder; of a read-held key, the reader with that token, or the whole group (RWL-45).
			for (Holder holder : holding(client, parent)) {
				if (fencingToken == null || holder.stat.getCzxid() == fencingToken) {
					try {
						client.delete().withVersion(holder.stat.getVersion()).forPath(holder.path);
						released = true;
					}
					catch (KeeperException.NoNodeException ex) {
						// Released meanwhile.
					}
					catch (KeeperException.BadVersionException ex) {
						// Renewed just now: still held, so not released; the operator lists again.
						survived = true;
					}
				}
			}
			return released && !survived;
		}
		catch (Exception ex) {
			throw new LockBackendException("The zookeeper backend could not release lock '" + key + "' by force: "
					+ ex.getMessage(), ex);
		}
	}

	/** A read-held key shows as {@code ~readers(<instances>)}, the lowest reader's token and the longest lease. */
	private @Nullable BackendLock holder(CuratorFramework client, String parent, String key) throws Exception {
		List<Holder> holding = holding(client, parent);
		if (holding.isEmpty()) {
			return null;
		}
		Holder first = holding.get(0);
		if (!ZooKeeperPaths.reader(ZooKeeperPaths.nodeName(first.path))) {
			return new BackendLock(key, ZooKeeperLockQueue.instance(first.data), first.stat.getCzxid(), remaining(first));
		}
		Set<String> instances = new TreeSet<>();
		long remaining = 0;
		for (Holder reader : holding) {
			String instance = ZooKeeperLockQueue.instance(reader.data);
			instances.add((instance != null) ? instance : "?");
			long left = remaining(reader);
			remaining = (remaining < 0 || left < 0) ? -1 : Math.max(remaining, left);
		}
		return new BackendLock(key, "~readers(" + String.join(", ", instances) + ")", first.stat.getCzxid(), remaining);
	}

	private static long remaining(Holder holder) {
		long ttl = ZooKeeperLockQueue.ttlMillis(holder.data);
		// The ensemble's time is not read here (a write would be needed): this JVM's clock.
		return (ttl == Long.MAX_VALUE) ? -1 : Math.max(0, holder.stat.getMtime() + ttl - System.currentTimeMillis());
	}

	/** The nodes that hold: the lowest, when a writer's; else the readers below the first writer (RWL-40). */
	private static List<Holder> holding(CuratorFramework client, String parent) throws Exception {
		List<String> children;
		try {
			children = new ArrayList<>(client.getChildren().forPath(parent));
		}
		catch (KeeperException.NoNodeException ex) {
			return List.of();
		}
		children.sort(Comparator.comparing(ZooKeeperPaths::sequence));
		List<Holder> holding = new ArrayList<>();
		for (String child : children) {
			boolean reader = ZooKeeperPaths.reader(child);
			if (!reader && !holding.isEmpty()) {
				break;
			}
			Stat stat = new Stat();
			try {
				byte[] data = client.getData().storingStatIn(stat).forPath(parent + "/" + child);
				holding.add(new Holder(parent + "/" + child, data, stat));
			}
			catch (KeeperException.NoNodeException ex) {
				// Gone meanwhile: the next one holds.
				continue;
			}
			if (!reader) {
				break;
			}
		}
		return holding;
	}

	private CuratorFramework connectedClient(String operation) {
		CuratorFramework client = this.backend.client();
		if (!client.getZookeeperClient().isConnected()) {
			throw new LockBackendException("The zookeeper backend cannot " + operation + ": not connected", null);
		}
		return client;
	}

	/** The key of a node name ({@link ZooKeeperPaths#encode}). */
	static String decode(String name) {
		ByteArrayOutputStream bytes = new ByteArrayOutputStream(name.length());
		for (int i = 0; i < name.length(); i++) {
			char c = name.charAt(i);
			if (c == '%' && i + 2 < name.length()) {
				bytes.write(Integer.parseInt(name.substring(i + 1, i + 3), 16));
				i += 2;
			}
			else {
				bytes.write(c);
			}
		}
		return bytes.toString(StandardCharsets.UTF_8);
	}

	private record Holder(String path, byte[] data, Stat stat) {
	}

}
