package dev.holdfast.zookeeper;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.zookeeper.data.Stat;

import dev.holdfast.spi.SessionLeases.LostListener;

/**
 * The session state of a backend's client and the locks it takes with it: follows Curator's
 * connection states, says whether the locks of this process are suspended, reports every lock
 * lost when the session is lost, and after a reconnection checks each held node again (on one
 * thread for all locks), reporting lost the locks whose nodes are gone.
 */
final class ZooKeeperSession {

	private static final Log logger = LogFactory.getLog(ZooKeeperLockBackend.class);

	private final CuratorFramework client;

	/** The lock nodes of this process, by owner token (the backend's map). */
	private final ConcurrentHashMap<String, ZooKeeperHold> holds;

	private final CopyOnWriteArrayList<LostListener> lostListeners = new CopyOnWriteArrayList<>();

	private final ConnectionStateListener stateListener = this::stateChanged;

	/** Checks held nodes after a reconnection: one thread, created on first use, for all locks. */
	private final ExecutorService verifier;

	/** Counts connection state changes, so that a stale check does not clear a newer suspension. */
	private final AtomicLong epoch = new AtomicLong();

	private volatile boolean suspended;

	private volatile String state;

	/** Starts listening to {@code client}'s connection states. */
	ZooKeeperSession(CuratorFramework client, ConcurrentHashMap<String, ZooKeeperHold> holds) {
		this.client = client;
		this.holds = holds;
		this.verifier = new ThreadPoolExecutor(0, 1, 10, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), (task) -> {
			Thread thread = new Thread(task, "holdfast-zookeeper-verifier");
			thread.setDaemon(true);
			return thread;
		});
		boolean connected = client.getZookeeperClient().isConnected();
		this.suspended = !connected;
		this.state = connected ? "CONNECTED" : "DISCONNECTED";
		client.getConnectionStateListenable().addListener(this.stateListener);
	}

	/** Whether the locks of this process count as not valid now. */
	boolean suspended() {
		return this.suspended;
	}

	/** The name of the last connection state, for messages and health details. */
	String state() {
		return this.state;
	}

	AutoCloseable onLost(LostListener listener) {
		this.lostListeners.add(listener);
		return () -> this.lostListeners.remove(listener);
	}

	/** Stops listening to the connection and stops the verifier. */
	void close() {
		this.client.getConnectionStateListenable().removeListener(this.stateListener);
		this.verifier.shutdownNow();
	}

	private void stateChanged(CuratorFramework client, ConnectionState newState) {
		long current = this.epoch.incrementAndGet();
		this.state = newState.name();
		switch (newState) {
			case SUSPENDED, READ_ONLY -> this.suspended = true;
			case LOST -> {
				this.suspended = true;
				loseAll("its ZooKeeper session was lost");
			}
			case CONNECTED, RECONNECTED -> this.verifier.execute(() -> verifyHolds(current));
		}
	}

	/**
	 * After the connection came back: a lock whose node is still there and owned by this session
	 * is valid again; any other is lost. Leases stay not valid until the check is done.
	 */
	private void verifyHolds(long stateEpoch) {
		try {
			long session = this.client.getZookeeperClient().getZooKeeper().getSessionId();
			for (Map.Entry<String, ZooKeeperHold> entry : this.holds.entrySet()) {
				ZooKeeperHold hold = entry.getValue();
				Stat stat = this.client.checkExists().forPath(hold.path);
				if (stat == null || stat.getEphemeralOwner() != session) {
					if (this.holds.remove(entry.getKey(), hold)) {
						notifyLost(hold.key, entry.getKey(), "its lock node was gone when the connection came back");
					}
				}
			}
			if (this.epoch.get() == stateEpoch) {
				this.suspended = false;
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		catch (Exception ex) {
			logger.warn("Holdfast could not check its ZooKeeper locks after the connection came back; they stay "
					+ "not valid until the next reconnection", ex);
		}
	}

	private void loseAll(String reason) {
		for (Map.Entry<String, ZooKeeperHold> entry : this.holds.entrySet()) {
			if (this.holds.remove(entry.getKey(), entry.getValue())) {
				notifyLost(entry.getValue().key, entry.getKey(), reason);
			}
		}
	}

	private void notifyLost(String key, String owner, String reason) {
		for (LostListener listener : this.lostListeners) {
			try {
				listener.lost(key, owner, reason);
			}
			catch (RuntimeException ex) {
				logger.warn("A Holdfast lost-lock listener failed", ex);
			}
		}
	}

}
