package dev.holdfast.zookeeper;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.InstanceNames;
import dev.holdfast.spi.WaitQueue.Outcome;

/**
 * The queue protocol of one acquisition: it creates the acquisition's ephemeral sequential node
 * under the key's container node, reads the queue, judges an expired holder by the ensemble's
 * clock and deletes its node, and waits on the node just before its own until it heads the
 * queue or its wait ends. It also defines a lock node's data: the time to live in milliseconds.
 * <p>
 * Bounded: no request is awaited past the wait plus one connection timeout, and no request to
 * find the turn is sent after the wait ran out. So a call returns within {@code maxWait} + the
 * client's connection timeout, and a grant is never returned later: the node of an acquisition
 * that gives up is deleted, also when its create is answered only after that. (A watch also
 * wakes on the connection's events; the loop then reads the queue again. A request of the wait
 * answered ConnectionLoss is followed by that read too, once the client is connected again on
 * the node's session within the wait; freshness runs from the node's last answered write: ZK-11.)
 */
final class ZooKeeperLockQueue {

	private static final Log logger = LogFactory.getLog(ZooKeeperLockBackend.class);

	static final String LOCK_NODE = "lock-";

	private final ZooKeeperLockBackend backend;

	private final CuratorFramework client;

	private final ZooKeeperTryOnce once;

	private final ZooKeeperSession session;

	private final String locksPath;

	ZooKeeperLockQueue(ZooKeeperLockBackend backend, ZooKeeperTryOnce once, ZooKeeperSession session) {
		this.backend = backend;
		this.client = backend.client();
		this.once = once;
		this.session = session;
		this.locksPath = backend.path("locks");
	}

	/**
	 * Takes the lock or waits for it until {@code maxWait} past {@code attemptStart} (one attempt
	 * when {@code maxWait} is zero); the caller has waited for the connection. A {@code reader}'s
	 * node is a read hold's (RWL-40); its one-shot checks come first, in {@link ZooKeeperReadHolds}.
	 */
	Outcome acquire(String key, String owner, Duration ttl, Duration maxWait, long attemptStart, boolean reader)
			throws InterruptedException {
		boolean oneShot = maxWait.isZero() || maxWait.isNegative();
		long waitEnd = attemptStart + (oneShot ? 0 : maxWait.toNanos());
		long deadline = waitEnd + this.backend.connectionTimeoutNanos();
		String parent = this.locksPath + "/" + ZooKeeperPaths.encode(key);
		byte[] data = ttlData(ttl, owner);
		if (oneShot && !reader) {
			Outcome once = this.once.tryFreeOrHeld(key, owner, ttl, parent, data, deadline);
			if (once != null) {
				return once;
			}
		}
		long losses = this.session.losses();
		long createSent = System.nanoTime();
		CompletableFuture<CuratorEvent> created = this.backend.send("acquire", key, (callback) -> this.client.create()
			.creatingParentContainersIfNeeded()
			.withProtection()
			.withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
			.inBackground(callback)
			.forPath(parent + "/" + (reader ? ZooKeeperReadHolds.READ_NODE : LOCK_NODE), data));
		CuratorEvent event = this.backend.answerOrDelete(created, createSent, deadline, "acquire", key, null);
		if (event.getResultCode() != Code.OK.intValue()) {
			throw this.backend.failure("acquire", key, event);
		}
		String path = event.getName();
		boolean acquired = false;
		try {
			Stat own = event.getStat();
			if (own == null) {
				// Found again by protected mode after a connection loss: the answer has no Stat.
				own = exists(key, path, null, deadline);
				if (own == null) {
					throw lostNode(key);
				}
			}
			Outcome outcome = waitForTurn(key, owner, ttl, parent, path, data, own, createSent, losses, oneShot,
					reader, waitEnd, deadline);
			acquired = outcome.result().acquired();
			return outcome;
		}
		finally {
			if (!acquired) {
				this.backend.deleteInBackground(path);
			}
		}
	}

	private Outcome waitForTurn(String key, String owner, Duration ttl, String parent, String path, byte[] data,
			Stat own, long createSent, long losses, boolean oneShot, boolean reader, long waitEnd, long deadline)
			throws InterruptedException {
		String node = ZooKeeperPaths.nodeName(path);
		// serverTime: the mtime of this node's last answered write, sent at serverTimeNanos (ZK-11)
		long serverTime = own.getMtime();
		long serverTimeNanos = createSent;
		Turn turn = new Turn();
		this.once.stamped(serverTime, serverTimeNanos);
		// A waiter keeps its node fresh, as a holder does, so that it is never judged expired
		// in the moment between becoming the head of the queue and taking the hold.
		long touchEveryNanos = Math.max(1, ttl.toNanos() / 3);
		boolean waited = false;
		while (true) {
			try {
				// The parent goes only once it is empty: this node is gone too then.
				// No release watch: this read follows this attempt's own create, and its delete would fire it.
				List<String> children = this.once.children(key, parent, false, deadline);
				if (children == null) {
					throw lostNode(key);
				}
				children.sort(Comparator.comparing(ZooKeeperPaths::sequence));
				int index = children.indexOf(node);
				if (index < 0) {
					throw lostNode(key);
				}
				ZooKeeperReadHolds.Behind behind = ZooKeeperReadHolds.behind(children, index, reader);
				if (behind == null) {
					// This read listed this node first (a reader: no writer node before it): on the
					// node's own session it is the check a takeover makes, so only a stale node is
					// written again. A read on a later session can list it too: Curator injects a session
					// expiration locally (SUSPENDED for the session timeout) while the server still keeps
					// the old session and its node, which then goes when the server expires it. So on another session, even without a wait,
					// takeHead reads the node and fails on its ephemeralOwner.
					boolean ownSession = this.backend.sessionId() == own.getEphemeralOwner();
					long confirmed = (waited || !ownSession)
							? takeHead(key, path, data, ttl, serverTimeNanos, ownSession, deadline) : serverTimeNanos;
					return held(owner, key, path, ttl, own, confirmed);
				}
				// The node waited behind (RWL-41), and the holder judged: that node when it holds and
				// this call waits, else the head (a one-shot attempt clears an expired head first).
				String predecessor = parent + "/" + behind.node();
				String holder = (behind.holds() && !oneShot) ? predecessor : parent + "/" + children.get(0);
				CountDownLatch woken = turn.next(predecessor);
				long holderRemaining = -1;
				if (behind.holds() || oneShot) {
					CuratorEvent read = this.backend.request("acquire", key, deadline, (callback) -> (oneShot)
							? this.client.getData().inBackground(callback).forPath(holder)
							: this.client.getData().usingWatcher(turn).inBackground(callback).forPath(holder));
					Code code = Code.get(read.getResultCode());
					if (code == Code.NONODE) {
						if (!behind.only()) {
							continue;
						}
						// The only node in the way (a reader: its only lower writer, the head), listed by
						// the read just before this one, is gone:
						// this node heads the queue (none can come before it again), and this read was
						// answered on a live session after that read listed it. What the queue's read
						// would tell, so the hold starts here, as after a takeover: only a stale node is
						// written again. Only if it was answered on the session that owns this node:
						// Curator retries a read across a session's expiry on the next session, and a
						// read on the next session sees the state after the server deleted this node.
						// Session ids are never reused and Curator never goes back to an old session,
						// so the node's session still being the client's now means this read ran on it.
						long confirmed = takeHead(key, path, data, ttl, serverTimeNanos,
								this.backend.sessionId() == own.getEphemeralOwner(), deadline);
						return held(owner, key, path, ttl, own, confirmed);
					}
					if (code != Code.OK) {
						throw this.backend.failure("acquire", key, read);
					}
					long expiresAt = saturatedAdd(read.getStat().getMtime(), ttlMillis(read.getData()));
					long estimatedNow = serverTime + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - serverTimeNanos);
					if (estimatedNow >= expiresAt && waited) {
						// Judge by the ensemble's clock: the time it stamps on a write of ours now.
						long sent = System.nanoTime();
						serverTime = touch(key, path, data, deadline).getMtime();
						serverTimeNanos = sent;
						this.once.stamped(serverTime, serverTimeNanos);
						estimatedNow = serverTime;
					}
					if (serverTime >= expiresAt) {
						deleteExpired(key, holder, read.getStat(), deadline);
						continue;
					}
					holderRemaining = Math.max(0, expiresAt - estimatedNow);
				}
				long remaining = waitEnd - System.nanoTime();
				if (oneShot && reader && ZooKeeperPaths.reader(children.get(0))) {
					// Read-held, a writer waiting: refused by that writer, with no remaining time (RWL-42).
					return new Outcome(AcquireResult.held(-1), 0);
				}
				if (oneShot || remaining <= 0) {
					return new Outcome(AcquireResult.held(holderRemaining), 0);
				}
				if (System.nanoTime() - serverTimeNanos >= touchEveryNanos) {
					long sent = System.nanoTime();
					serverTime = touch(key, path, data, deadline).getMtime();
					serverTimeNanos = sent;
					this.once.stamped(serverTime, serverTimeNanos);
				}
				if (!behind.holds() && exists(key, predecessor, turn, deadline) == null) {
					continue;
				}
				long sleep = Math.min(waitEnd - System.nanoTime(), serverTimeNanos + touchEveryNanos - System.nanoTime());
				if (holderRemaining >= 0) {
					sleep = Math.min(sleep, TimeUnit.MILLISECONDS.toNanos(holderRemaining + 1));
				}
				boolean wokenUp = woken.await(sleep, TimeUnit.NANOSECONDS);
				waited = true;
				if (wokenUp && behind.only() && turn.holderDeleted) {
					// The holder's node is gone and no node before ours can appear (sequence numbers
					// only grow, and the parent is replaced only when empty): this waiter heads the
					// queue, no read of the queue needed. The read in the watch's registration saw the
					// holder, so the deletion is the holder's release, expiry or session end. takeHead
					// still confirms, with one read, that this node and session are alive: the event
					// does not prove it (it may have waited in the socket while the session ended
					// behind it, the watch may be on the session after the node's, and a deletion of
					// this node by anyone else sends no event here; see docs/decisions/0032).
					long confirmed = takeHead(key, path, data, ttl, serverTimeNanos, false, deadline);
					return held(owner, key, path, ttl, own, confirmed);
				}
				if (!wokenUp && waitEnd - System.nanoTime() <= 0) {
					// The wait ran out with no turn: no request after it looks for one.
					return new Outcome(AcquireResult.held(holderRemaining), 0);
				}
			}
			catch (LockBackendException ex) {
				// ZK-11: a request lost with the connection; the next loop reads the queue again.
				reconnected(key, ex, own.getEphemeralOwner(), losses, waitEnd);
				waited = true;
			}
		}
	}

	/**
	 * After a request of the wait was answered ConnectionLoss (Curator's retries spent): waits for
	 * the connection until the wait ends; returns once connected to the quorum on the session that
	 * owns the waiter's node, within the wait (ZK-11).
	 * @throws LockBackendException {@code failure} when it is not a ConnectionLoss, the wait ran
	 * out first or the client or backend closed; the node lost when the session was lost
	 */
	void reconnected(String key, LockBackendException failure, long nodeSession, long losses, long waitEnd)
			throws InterruptedException {
		if (!(failure.getCause() instanceof KeeperException.ConnectionLossException)) {
			throw failure;
		}
		switch (this.session.awaitConnection(nodeSession, losses, waitEnd)) {
			case LOST -> throw lostNode(key);
			case GAVE_UP -> throw failure;
			case SAME_SESSION -> {
				// ZK-9: no request looks for the turn after the wait.
				if (waitEnd - System.nanoTime() <= 0) {
					throw failure;
				}
			}
		}
		logger.debug("Holdfast reads the queue of lock '" + key + "' again after a connection loss");
	}

	/**
	 * The one watch of a {@code waitForTurn}, registered again on each pass (the client keeps one
	 * registration of it per node): it wakes the pass in progress, and tells whether the holder
	 * that pass saw was deleted.
	 */
	private static final class Turn implements Watcher {

		private volatile String holder = "";

		private volatile boolean holderDeleted;

		private volatile CountDownLatch woken = new CountDownLatch(1);

		/** A new pass, behind {@code holder}: returns the latch the watch counts down. */
		CountDownLatch next(String holder) {
			this.holderDeleted = false;
			this.holder = holder;
			CountDownLatch latch = new CountDownLatch(1);
			this.woken = latch;
			return latch;
		}

		@Override
		public void process(WatchedEvent event) {
			if (event.getType() == Watcher.Event.EventType.NodeDeleted && this.holder.equals(event.getPath())) {
				this.holderDeleted = true;
			}
			this.woken.countDown();
		}

	}

	private Outcome held(String owner, String key, String path, Duration ttl, Stat own, long confirmed) {
		this.backend.hold(owner, key, path, confirmed, ttl);
		return new Outcome(AcquireResult.acquired(own.getCzxid()), confirmed);
	}

	/**
	 * The head of the queue takes the hold after waiting; returns when the request that set the
	 * node's time to live was sent. The lease runs from the node's last write, as contenders judge
	 * it (its {@code mtime}); a waiter whose last write is older than a hundredth of its time to
	 * live writes again, so that a hold taken after a long wait lives its time to live from the end
	 * of the wait. Otherwise one read confirms that the node is still there and belongs to the
	 * current session: a watch event can arrive after the session expired, the server deleted
	 * the node and the next waiter took the lock (the client's Disconnected and Expired events
	 * queue behind it), and only a request fails on an expired session. A read is answered by the
	 * connected server without a quorum. {@code checked}: a read sent after the wait already showed
	 * this node at the head of the queue on a live session (the queue listing it first, or the
	 * only node before it gone, just after the queue listed both, answered on the session that
	 * owns this node): a fresh node needs no request.
	 */
	private long takeHead(String key, String path, byte[] data, Duration ttl, long lastWriteNanos, boolean checked,
			long deadline) throws InterruptedException {
		boolean fresh = System.nanoTime() - lastWriteNanos <= ttl.toNanos() / 100;
		if (fresh && checked) {
			return lastWriteNanos;
		}
		long sent = System.nanoTime();
		Stat stat = (fresh) ? exists(key, path, null, deadline) : touch(key, path, data, deadline);
		if (stat == null || stat.getEphemeralOwner() != this.backend.sessionId()) {
			throw lostNode(key);
		}
		if (fresh) {
			return lastWriteNanos;
		}
		this.once.stamped(stat.getMtime(), sent);
		return sent;
	}

	/** Rewrites this acquisition's own node; its deletion is reported as the node lost. */
	private Stat touch(String key, String path, byte[] data, long deadline) throws InterruptedException {
		CuratorEvent event = this.backend.request("acquire", key, deadline,
				(callback) -> this.client.setData().inBackground(callback).forPath(path, data));
		Code code = Code.get(event.getResultCode());
		if (code == Code.NONODE) {
			throw lostNode(key);
		}
		if (code != Code.OK) {
			throw this.backend.failure("acquire", key, event);
		}
		return event.getStat();
	}

	/** The node's Stat, or {@code null} when it does not exist; watched when a watcher is given. */
	private @Nullable Stat exists(String key, String path, @Nullable Watcher watcher, long deadline)
			throws InterruptedException {
		CuratorEvent event = this.backend.request("acquire", key, deadline, (callback) -> (watcher != null)
				? this.client.checkExists().usingWatcher(watcher).inBackground(callback).forPath(path)
				: this.client.checkExists().inBackground(callback).forPath(path));
		Code code = Code.get(event.getResultCode());
		if (code != Code.OK && code != Code.NONODE) {
			throw this.backend.failure("acquire", key, event);
		}
		return event.getStat();
	}

	private void deleteExpired(String key, String holder, Stat holderStat, long deadline) throws InterruptedException {
		CuratorEvent event = this.backend.request("acquire", key, deadline,
				(callback) -> this.client.delete().withVersion(holderStat.getVersion()).inBackground(callback).forPath(holder));
		Code code = Code.get(event.getResultCode());
		if (code == Code.OK && logger.isDebugEnabled()) {
			logger.debug("Holdfast deleted lock node " + holder + " of lock '" + key
					+ "': its time to live ran out by the ensemble's clock");
		}
		// NONODE, BADVERSION: released, or renewed just before; the next read of the queue tells.
		else if (code != Code.OK && code != Code.NONODE && code != Code.BADVERSION) {
			throw this.backend.failure("acquire", key, event);
		}
	}

	static LockBackendException lostNode(String key) {
		return new LockBackendException("The zookeeper backend lost its queued node for lock '" + key
				+ "' while acquiring it (session expired, or the node was deleted)", null);
	}

	/** A lock node's data: {@code <ttl millis> <instance name>}, or the time to live alone. */
	static byte[] ttlData(Duration ttl, String owner) {
		String instance = InstanceNames.of(owner);
		String ttlMillis = Long.toString(Math.max(1, ttl.toMillis()));
		return ((instance != null) ? ttlMillis + " " + instance : ttlMillis).getBytes(StandardCharsets.US_ASCII);
	}

	/** The instance name in a lock node's data, or {@code null}. */
	static @Nullable String instance(byte @Nullable [] data) {
		String text = (data != null) ? new String(data, StandardCharsets.US_ASCII) : "";
		int space = text.indexOf(' ');
		return (space > 0) ? text.substring(space + 1) : null;
	}

	/** {@code a + b}, or {@link Long#MAX_VALUE} when that overflows (a time to live that never ends). */
	static long saturatedAdd(long a, long b) {
		long sum = a + b;
		return (((a ^ sum) & (b ^ sum)) < 0) ? Long.MAX_VALUE : sum;
	}

	/** The time to live in a lock node's data; a node that is not ours never expires. */
	static long ttlMillis(byte @Nullable [] data) {
		if (data == null || data.length == 0) {
			return Long.MAX_VALUE;
		}
		try {
			String text = new String(data, StandardCharsets.US_ASCII);
			int space = text.indexOf(' ');
			return Long.parseLong((space > 0) ? text.substring(0, space) : text);
		}
		catch (NumberFormatException ex) {
			return Long.MAX_VALUE;
		}
	}

}
