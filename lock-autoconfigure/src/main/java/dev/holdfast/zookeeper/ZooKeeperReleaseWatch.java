package dev.holdfast.zookeeper;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.jspecify.annotations.Nullable;

/**
 * The release events of a ZooKeeper backend (ZK-10): while anyone subscribes, an attempt that
 * finds a lock held leaves this one-shot children watch on the key's parent node with its read of
 * the queue, and the watch's firing (a node of the queue gone or added, the parent deleted) is
 * announced as the key's release. ZooKeeper keeps one such watch per parent and session until the
 * queue next changes; nothing is kept here but the subscribers.
 */
final class ZooKeeperReleaseWatch implements Watcher {

	private static final Log logger = LogFactory.getLog(ZooKeeperLockBackend.class);

	/** {@code <base>/locks/}: a watched path is this and an encoded key. */
	private final String locksPrefix;

	private final List<Consumer<String>> listeners = new CopyOnWriteArrayList<>();

	ZooKeeperReleaseWatch(String locksPath) {
		this.locksPrefix = locksPath + "/";
	}

	AutoCloseable subscribe(Consumer<String> listener) {
		this.listeners.add(listener);
		return () -> this.listeners.remove(listener);
	}

	/** The watch a refused attempt's read of the queue leaves; {@code null} while nobody subscribes. */
	@Nullable Watcher watcher() {
		return this.listeners.isEmpty() ? null : this;
	}

	/** On the client's event thread: the key's queue changed. Connection events (no path) tell nothing. */
	@Override
	public void process(WatchedEvent event) {
		String path = event.getPath();
		if (path == null || !path.startsWith(this.locksPrefix) || path.indexOf('/', this.locksPrefix.length()) >= 0) {
			return;
		}
		for (Consumer<String> listener : this.listeners) {
			try {
				listener.accept(ZooKeeperClusterLocks.decode(path.substring(this.locksPrefix.length())));
			}
			catch (RuntimeException ex) {
				logger.warn("A listener of the release of lock node " + path + " failed", ex);
			}
		}
	}

}
