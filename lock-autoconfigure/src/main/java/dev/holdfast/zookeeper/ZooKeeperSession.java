package dev.holdfast.zookeeper;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

import dev.holdfast.spi.SessionLeases.LostListener;

/**
 * The session of a backend's client and the locks it takes with it. It vouches for the locks of
 * this process only while two things hold:
 * <ul>
 * <li>the connection is not suspended (Curator's connection states), and after a reconnection
 * each held node was found again, on one thread for all locks; a lock whose node is gone is
 * reported lost, and every lock is reported lost when the session is;</li>
 * <li>the server answered a request of this process sent less than the negotiated session
 * timeout ago. Past that the server may have expired the session and deleted its nodes, whatever
 * Curator has told so far: a JVM that paused longer than the session learns of it only after its
 * threads run again. While it holds or waits for a lock, a heartbeat ({@code sync}, answered
 * through the leader) keeps that confirmation fresh, every half connection timeout, at most a
 * third of the session timeout.</li>
 * </ul>
 * A heartbeat or any request that the connected server leaves unanswered for a whole connection
 * timeout means the server is cut off from the quorum or stuck; the connection is then dropped,
 * so that the client moves to another server within its session (as ZooKeeper's own request
 * timeout does), instead of waiting until that server notices it lost its leader.
 */
final class ZooKeeperSession {

	private static final Log logger = LogFactory.getLog(ZooKeeperLockBackend.class);

	private final CuratorFramework client;

	/** The lock nodes of this process, by owner token (the backend's map). */
	private final ConcurrentHashMap<String, ZooKeeperHold> holds;

	private final String syncPath;

	private final long connectionTimeoutNanos;

	private final CopyOnWriteArrayList<LostListener> lostListeners = new CopyOnWriteArrayList<>();

	private final CopyOnWriteArrayList<Runnable> suspendListeners = new CopyOnWriteArrayList<>();

	private final ConnectionStateListener stateListener = this::stateChanged;

	/** Heartbeats and checks of held nodes after a reconnection: one thread, ended when idle. */
	private final ScheduledThreadPoolExecutor executor;

	/** Counts connection state changes, so that a stale check does not clear a newer suspension. */
	private final AtomicLong epoch = new AtomicLong();

	/** Acquisitions of this process in progress. */
	private final AtomicInteger acquiring = new AtomicInteger();

	private final AtomicBoolean beating = new AtomicBoolean();

	private volatile boolean suspended;

	private volatile String state;

	/** When the newest request that the server answered was sent, System.nanoTime. */
	private final AtomicLong confirmedNanos = new AtomicLong();

	private volatile long sessionTimeoutNanos;

	/** When the heartbeat in flight was sent, or 0. */
	private volatile long syncSentNanos;

	private final AtomicLong droppedAtNanos = new AtomicLong(System.nanoTime());

	/** How many times Curator reported the session LOST. */
	private final AtomicLong losses = new AtomicLong();

	/** One latch per acquisition awaiting the connection (ZK-11), counted down on every state change and on close. */
	private final Set<CountDownLatch> connectionWaits = ConcurrentHashMap.newKeySet();

	private volatile boolean closed;

	/** What {@link #awaitConnection} found. */
	enum Reconnection {

		/** Connected to the quorum again, on the session that owns the node. */
		SAME_SESSION,

		/** The session that owns the node is lost: Curator reported it LOST, or the client is on another one. */
		LOST,

		/** No connection before the wait ended, or the client or this backend closed. */
		GAVE_UP

	}

	/** Starts listening to {@code client}'s connection states. */
	ZooKeeperSession(CuratorFramework client, ConcurrentHashMap<String, ZooKeeperHold> holds, String syncPath,
			long connectionTimeoutMillis) {
		this.client = client;
		this.holds = holds;
		this.syncPath = syncPath;
		this.connectionTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(connectionTimeoutMillis);
		this.executor = new ScheduledThreadPoolExecutor(1, (task) -> {
			Thread thread = new Thread(task, "holdfast-zookeeper-session");
			thread.setDaemon(true);
			return thread;
		});
		this.executor.setKeepAliveTime(10, TimeUnit.SECONDS);
		this.executor.allowCoreThreadTimeOut(true);
		this.executor.setRemoveOnCancelPolicy(true);
		boolean connected = client.getZookeeperClient().isConnected();
		this.suspended = !connected;
		this.state = connected ? "CONNECTED" : "DISCONNECTED";
		this.sessionTimeoutNanos = negotiatedTimeoutNanos();
		this.confirmedNanos.set(System.nanoTime() - this.sessionTimeoutNanos);
		client.getConnectionStateListenable().addListener(this.stateListener);
	}

	/**
	 * Whether the locks of this process count as not valid now: the connection is suspended, or
	 * no answer of the server to a request sent within the session timeout confirms the session.
	 */
	boolean suspended() {
		return this.suspended || System.nanoTime() - this.confirmedNanos.get() - this.sessionTimeoutNanos >= 0;
	}

	/** How long the session still vouches for the locks: 0 while suspended, else until ZK-8's bound. */
	long vouchedNanos() {
		return this.suspended ? 0
				: Math.max(0, this.confirmedNanos.get() + this.sessionTimeoutNanos - System.nanoTime());
	}

	AutoCloseable onSuspended(Runnable listener) {
		this.suspendListeners.add(listener);
		return () -> this.suspendListeners.remove(listener);
	}

	/** The server answered a request of this process sent at {@code sentNanos}. */
	void confirmed(long sentNanos) {
		this.confirmedNanos.accumulateAndGet(sentNanos, (current, sent) -> (sent - current > 0) ? sent : current);
	}

	/** The client's session now (0 while a new one is being established); no request. */
	long id() {
		try {
			return this.client.getZookeeperClient().getZooKeeper().getSessionId();
		}
		catch (Exception ex) {
			return 0;
		}
	}

	/** The name of the last connection state, for messages and health details. */
	String state() {
		return this.state;
	}

	AutoCloseable onLost(LostListener listener) {
		this.lostListeners.add(listener);
		return () -> this.lostListeners.remove(listener);
	}

	/** An acquisition of this process starts; the heartbeat runs until it ends and nothing is held. */
	void acquiring() {
		this.acquiring.incrementAndGet();
		beat();
	}

	/** An acquisition of this process ended, whatever its outcome. */
	void acquisitionEnded() {
		this.acquiring.decrementAndGet();
	}

	/** A lock of this process is held from now on: its session is kept confirmed. */
	void holding() {
		beat();
	}

	/**
	 * A request sent at {@code sentNanos} got no answer by now: when it waited a whole connection
	 * timeout on a connection that is up, the connection is dropped, once per connection timeout,
	 * and the client reconnects to another server of the ensemble within its session.
	 */
	void unanswered(long sentNanos, String what) {
		long now = System.nanoTime();
		long dropped = this.droppedAtNanos.get();
		if (now - sentNanos < this.connectionTimeoutNanos || now - dropped < this.connectionTimeoutNanos
				|| !this.client.getZookeeperClient().isConnected() || !this.droppedAtNanos.compareAndSet(dropped, now)) {
			return;
		}
		logger.warn("Holdfast dropped the connection to its ZooKeeper server: " + what + " got no answer within "
				+ TimeUnit.NANOSECONDS.toMillis(this.connectionTimeoutNanos)
				+ " ms (the server is cut off from the quorum, or stuck); the client reconnects to another server");
		try {
			this.client.getZookeeperClient().getZooKeeper().getTestable().closeSocket();
		}
		catch (Exception ex) {
			logger.debug("Could not drop the ZooKeeper connection", ex);
		}
	}

	/** How many times Curator reported the session LOST so far, for {@link #awaitConnection}. */
	long losses() {
		return this.losses.get();
	}

	/**
	 * ZK-11: waits until the client is connected to the quorum (not to a read-only server) on a
	 * session, until {@code waitEnd} at most; wakes on every connection state change and on
	 * {@link #close}, and looks again at least every connection timeout (Curator's own close tells
	 * no listener). A session id of 0 is a session being established: it waits on.
	 * @param nodeSession the session that owns the waiter's node
	 * @param lossesBefore {@link #losses()} before the node was created
	 */
	Reconnection awaitConnection(long nodeSession, long lossesBefore, long waitEnd) throws InterruptedException {
		while (true) {
			CountDownLatch changed = new CountDownLatch(1);
			this.connectionWaits.add(changed);
			try {
				if (this.losses.get() != lossesBefore) {
					return Reconnection.LOST;
				}
				if (this.closed || this.client.getState() != CuratorFrameworkState.STARTED) {
					return Reconnection.GAVE_UP;
				}
				long session = connectedSession();
				if (session != 0) {
					return (session == nodeSession) ? Reconnection.SAME_SESSION : Reconnection.LOST;
				}
				long left = waitEnd - System.nanoTime();
				if (left <= 0) {
					return Reconnection.GAVE_UP;
				}
				changed.await(Math.min(left, this.connectionTimeoutNanos), TimeUnit.NANOSECONDS);
			}
			finally {
				this.connectionWaits.remove(changed);
			}
		}
	}

	/** The session of the client's connection to the quorum; 0 when disconnected, read only or establishing one. */
	private long connectedSession() {
		try {
			ZooKeeper zooKeeper = this.client.getZookeeperClient().getZooKeeper();
			return (zooKeeper.getState() == ZooKeeper.States.CONNECTED) ? zooKeeper.getSessionId() : 0;
		}
		catch (Exception ex) {
			return 0;
		}
	}

	/** Stops listening to the connection and stops the heartbeat; connection waits end. */
	void close() {
		this.closed = true;
		this.connectionWaits.forEach(CountDownLatch::countDown);
		this.client.getConnectionStateListenable().removeListener(this.stateListener);
		this.executor.shutdownNow();
	}

	/** Runs the heartbeat now and then again while this process holds or waits for a lock. */
	private void beat() {
		if (this.beating.compareAndSet(false, true)) {
			try {
				this.executor.execute(this::heartbeat);
			}
			catch (RuntimeException ex) {
				// Closed.
				this.beating.set(false);
			}
		}
	}

	private void heartbeat() {
		if (this.holds.isEmpty() && this.acquiring.get() == 0) {
			this.beating.set(false);
			// A lock taken meanwhile started no heartbeat of its own, as this one still ran.
			if (!this.holds.isEmpty() || this.acquiring.get() > 0) {
				beat();
			}
			return;
		}
		long period = Math.min(this.connectionTimeoutNanos / 2, this.sessionTimeoutNanos / 3);
		long now = System.nanoTime();
		long sent = this.syncSentNanos;
		long next = now + period;
		if (sent != 0) {
			unanswered(sent, "a heartbeat");
			next = Math.min(next, sent + this.connectionTimeoutNanos);
		}
		else if (now - this.confirmedNanos.get() >= period) {
			sync(now);
		}
		else {
			next = this.confirmedNanos.get() + period;
		}
		try {
			this.executor.schedule(this::heartbeat, Math.max(1, next - System.nanoTime()), TimeUnit.NANOSECONDS);
		}
		catch (RuntimeException ex) {
			// Closed.
		}
	}

	private void sync(long sent) {
		this.syncSentNanos = sent;
		try {
			this.client.sync().inBackground((client, event) -> {
				this.syncSentNanos = 0;
				if (event.getResultCode() == KeeperException.Code.OK.intValue()) {
					confirmed(sent);
				}
			}).forPath(this.syncPath);
		}
		catch (Exception ex) {
			this.syncSentNanos = 0;
			logger.debug("Could not send a heartbeat to ZooKeeper", ex);
		}
	}

	private void stateChanged(CuratorFramework client, ConnectionState newState) {
		long current = this.epoch.incrementAndGet();
		this.state = newState.name();
		switch (newState) {
			case SUSPENDED, READ_ONLY -> {
				this.suspended = true;
				this.suspendListeners.forEach(Runnable::run);
			}
			case LOST -> {
				this.losses.incrementAndGet();
				this.suspended = true;
				this.suspendListeners.forEach(Runnable::run);
				loseAll("its ZooKeeper session was lost");
			}
			case CONNECTED, RECONNECTED -> {
				this.syncSentNanos = 0;
				this.sessionTimeoutNanos = negotiatedTimeoutNanos();
				try {
					this.executor.execute(() -> verifyHolds(current));
				}
				catch (RuntimeException ex) {
					// Closed.
				}
			}
		}
		this.connectionWaits.forEach(CountDownLatch::countDown);
	}

	/**
	 * After the connection came back: a lock whose node is still there and owned by this session
	 * is valid again; any other is lost. Leases stay not valid until the check is done.
	 */
	private void verifyHolds(long stateEpoch) {
		try {
			long sent = System.nanoTime();
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
				// The session was re-established through the leader just before: it is confirmed.
				confirmed(sent);
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

	private long negotiatedTimeoutNanos() {
		int negotiated = this.client.getZookeeperClient().getLastNegotiatedSessionTimeoutMs();
		return TimeUnit.MILLISECONDS.toNanos((negotiated > 0) ? negotiated : Integer.MAX_VALUE);
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
