package dev.holdfast.zookeeper;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.WaitQueue.Outcome;

/**
 * The queue protocol of one acquisition: it creates the acquisition's ephemeral sequential node
 * under the key's container node, reads the queue, judges an expired holder by the ensemble's
 * clock and deletes its node, and waits on the node just before its own until it heads the
 * queue or its wait ends. It also defines a lock node's data: the time to live in milliseconds.
 * <p>
 * One attempt ({@code maxWait} zero) first tries to take a free lock in one transaction, which
 * only succeeds on an empty queue; when it fails because the queue is not empty, it reads the
 * queue and the holder's node and fails without writing, unless the holder may have expired.
 */
final class ZooKeeperLockQueue {

	private static final Log logger = LogFactory.getLog(ZooKeeperLockBackend.class);

	private static final String LOCK_NODE = "lock-";

	/** A one-shot attempt's read found the holder's node gone: the lock was just released. */
	private static final Outcome RELEASED = new Outcome(AcquireResult.held(0), 0);

	/** The sequence number of the first child of a new parent node. */
	private static final String FIRST_SEQUENCE = "0000000000";

	/**
	 * How long the ensemble's time stamped on a write of this process may serve, moved on by the
	 * local monotonic clock, to tell that a holder has not expired: beyond it a one-shot attempt
	 * judges by a write of its own.
	 */
	private static final long ENSEMBLE_TIME_VALID_NANOS = TimeUnit.SECONDS.toNanos(1);

	private final ZooKeeperLockBackend backend;

	private final CuratorFramework client;

	private final String locksPath;

	/** The lock nodes of this process, by owner token (the backend's map). */
	private final ConcurrentHashMap<String, ZooKeeperHold> holds;

	/** The newest ensemble time stamped on a write of this process, or null. */
	private volatile @Nullable EnsembleTime ensembleTime;

	/**
	 * The holder a one-shot attempt of this process saw last, or null: one entry, so that a busy
	 * {@code tryAcquire} loop on one key reads only the queue while the same node holds.
	 */
	private volatile @Nullable SeenHolder seen;

	ZooKeeperLockQueue(ZooKeeperLockBackend backend, ConcurrentHashMap<String, ZooKeeperHold> holds) {
		this.backend = backend;
		this.client = backend.client();
		this.locksPath = backend.path("locks");
		this.holds = holds;
	}

	/**
	 * Takes the lock or waits for it until {@code maxWait} past {@code attemptStart} (one attempt
	 * when {@code maxWait} is zero); the caller has waited for the connection.
	 */
	Outcome acquire(String key, String owner, Duration ttl, Duration maxWait, long attemptStart)
			throws InterruptedException {
		long deadline = attemptStart + maxWait.toNanos();
		boolean oneShot = maxWait.isZero() || maxWait.isNegative();
		String parent = this.locksPath + "/" + ZooKeeperPaths.encode(key);
		byte[] data = ttlData(ttl);
		if (oneShot) {
			Outcome once = tryFreeOrHeld(key, owner, ttl, parent, data);
			if (once != null) {
				return once;
			}
		}
		Stat own = new Stat();
		long createSent = System.nanoTime();
		String path = this.backend.call("acquire", key, () -> this.client.create()
			.storingStatIn(own)
			.creatingParentContainersIfNeeded()
			.withProtection()
			.withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
			.forPath(parent + "/" + LOCK_NODE, data));
		String node = ZooKeeperPaths.nodeName(path);
		if (own.getCzxid() == 0) {
			// Found again by protected mode after a connection loss: the create's Stat was not filled.
			// A failed read leaves the node to the background delete, as a failed wait below does.
			Stat found;
			try {
				found = this.backend.call("acquire", key, () -> this.client.checkExists().forPath(path));
			}
			catch (RuntimeException | InterruptedException ex) {
				this.backend.deleteInBackground(path);
				throw ex;
			}
			if (found != null) {
				own.setCzxid(found.getCzxid());
				own.setCtime(found.getCtime());
				own.setMtime(found.getMtime());
				own.setEphemeralOwner(found.getEphemeralOwner());
			}
		}
		long serverTime = own.getMtime();
		long serverTimeNanos = createSent;
		stamped(serverTime, serverTimeNanos);
		// A waiter keeps its node fresh, as a holder does, so that it is never judged expired
		// in the moment between becoming the head of the queue and taking the hold.
		long touchEveryNanos = Math.max(1, ttl.toNanos() / 3);
		boolean waited = false;
		boolean acquired = false;
		try {
			while (true) {
				// The parent goes only once it is empty: this node is gone too then.
				List<String> children = children(key, parent);
				if (children == null) {
					throw lostNode(key);
				}
				children.sort(Comparator.comparing(ZooKeeperPaths::sequence));
				int index = children.indexOf(node);
				if (index < 0) {
					throw lostNode(key);
				}
				if (index == 0) {
					// This read listed this node first: on the node's own session it is the check a
					// takeover makes, so only a stale node is written again. A read on a later session
					// can list it too: Curator injects a session expiration locally (SUSPENDED for the
					// session timeout) while the server still keeps the old session and its node, which
					// then goes when the server expires it. So on another session, even without a wait,
					// takeHead reads the node and fails on its ephemeralOwner.
					boolean ownSession = sessionId(key) == own.getEphemeralOwner();
					long confirmed = (waited || !ownSession)
							? takeHead(key, path, data, ttl, serverTimeNanos, ownSession)
							: serverTimeNanos;
					this.backend.hold(owner, key, path, confirmed, ttl);
					acquired = true;
					return new Outcome(AcquireResult.acquired(own.getCzxid()), confirmed);
				}
				String holder = parent + "/" + children.get(0);
				String predecessor = parent + "/" + children.get(index - 1);
				CountDownLatch turn = new CountDownLatch(1);
				boolean[] holderDeleted = new boolean[1];
				Watcher watcher = (event) -> {
					if (event.getType() == Watcher.Event.EventType.NodeDeleted && holder.equals(event.getPath())) {
						holderDeleted[0] = true;
					}
					turn.countDown();
				};
				long holderRemaining = -1;
				if (index == 1 || oneShot) {
					Stat holderStat = new Stat();
					byte[] holderData;
					try {
						holderData = (oneShot) ? this.client.getData().storingStatIn(holderStat).forPath(holder)
								: this.client.getData().storingStatIn(holderStat).usingWatcher(watcher).forPath(holder);
					}
					catch (KeeperException.NoNodeException ex) {
						if (index > 1) {
							continue;
						}
						// The only node before ours, listed by the read just before this one, is gone:
						// this node heads the queue (none can come before it again), and this read was
						// answered on a live session after that read listed it. What the queue's read
						// would tell, so the hold starts here, as after a takeover: only a stale node
						// is written again. Only if it was answered on the session that owns this node:
						// Curator retries a read across a session's expiry on the next session, and a
						// read on the next session sees the state after the server deleted this node.
						// Session ids are never reused and Curator never goes back to an old session,
						// so the node's session still being the client's now means this read ran on it.
						long confirmed = takeHead(key, path, data, ttl, serverTimeNanos,
								sessionId(key) == own.getEphemeralOwner());
						this.backend.hold(owner, key, path, confirmed, ttl);
						acquired = true;
						return new Outcome(AcquireResult.acquired(own.getCzxid()), confirmed);
					}
					catch (InterruptedException ex) {
						throw ex;
					}
					catch (Exception ex) {
						throw this.backend.failure("acquire", key, ex);
					}
					long expiresAt = ZooKeeperLockBackend.saturatedAdd(holderStat.getMtime(), ttlMillis(holderData));
					long estimatedNow = serverTime + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - serverTimeNanos);
					if (estimatedNow >= expiresAt && waited) {
						// Judge by the ensemble's clock: the time it stamps on a write of ours now.
						serverTimeNanos = System.nanoTime();
						serverTime = touch(key, path, data).getMtime();
						stamped(serverTime, serverTimeNanos);
						estimatedNow = serverTime;
					}
					if (serverTime >= expiresAt) {
						deleteExpired(key, holder, holderStat);
						continue;
					}
					holderRemaining = Math.max(0, expiresAt - estimatedNow);
				}
				long remaining = deadline - System.nanoTime();
				if (oneShot || remaining <= 0) {
					return new Outcome(AcquireResult.held(holderRemaining), 0);
				}
				if (System.nanoTime() - serverTimeNanos >= touchEveryNanos) {
					serverTimeNanos = System.nanoTime();
					serverTime = touch(key, path, data).getMtime();
					stamped(serverTime, serverTimeNanos);
				}
				if (index > 1 && this.backend.call("acquire", key,
						() -> this.client.checkExists().usingWatcher(watcher).forPath(predecessor)) == null) {
					continue;
				}
				long sleep = Math.min(remaining, serverTimeNanos + touchEveryNanos - System.nanoTime());
				if (holderRemaining >= 0) {
					sleep = Math.min(sleep, TimeUnit.MILLISECONDS.toNanos(holderRemaining + 1));
				}
				boolean woken = turn.await(sleep, TimeUnit.NANOSECONDS);
				waited = true;
				if (woken && index == 1 && holderDeleted[0]) {
					// The holder's node is gone and no node before ours can appear (sequence numbers
					// only grow, and the parent is replaced only when empty): this waiter heads the
					// queue, no read of the queue needed. The read in the watch's registration saw
					// the holder, so the deletion is the holder's release, expiry or session end.
					// takeHead still confirms, with one read, that this node and session are alive: the
					// event does not prove it (it may have waited in the socket while the session ended
					// behind it, the watch may be on the session after the node's, and a deletion of
					// this node by anyone else sends no event here; see docs/decisions/0032).
					long confirmed = takeHead(key, path, data, ttl, serverTimeNanos, false);
					this.backend.hold(owner, key, path, confirmed, ttl);
					acquired = true;
					return new Outcome(AcquireResult.acquired(own.getCzxid()), confirmed);
				}
			}
		}
		finally {
			if (!acquired) {
				this.backend.deleteInBackground(path);
			}
		}
	}

	/**
	 * One attempt's short ways: a free lock (an empty queue) is taken in one transaction, and a
	 * lock held by another node is refused after reading the queue (and the holder's node, unless
	 * this process just read it), with nothing written. {@code null} when neither applies: the
	 * parent node is missing, the queue kept changing, or the holder may have expired (judged then
	 * by a write of the caller's own, on the queue's path).
	 */
	private @Nullable Outcome tryFreeOrHeld(String key, String owner, Duration ttl, String parent, byte[] data)
			throws InterruptedException {
		SeenHolder seen = this.seen;
		// This process last saw this lock held: most likely it still is, and one read tells.
		boolean readFirst = seen != null && seen.parent().equals(parent);
		for (int round = 0; round < 3; round++) {
			if (readFirst) {
				List<String> children = children(key, parent);
				if (children == null) {
					return null;
				}
				if (!children.isEmpty()) {
					Outcome outcome = heldOrNull(key, owner, ttl, parent, children, null, 0);
					if (outcome != RELEASED) {
						return outcome;
					}
				}
			}
			// Named as Curator's protected mode names its nodes; the replaced parent's first child.
			String name = "_c_" + UUID.randomUUID() + "-" + LOCK_NODE;
			String path = parent + "/" + name + FIRST_SEQUENCE;
			long sent = System.nanoTime();
			try {
				// Deleting the parent succeeds only while it has no child: the queue is empty when
				// this transaction is applied, so its node holds the lock. One write, no read. The
				// parent's setData is there for its Stat (Curator keeps no Stat of a create): the
				// new parent was created by the same transaction, so its czxid and ctime are the
				// node's.
				List<CuratorTransactionResult> results = this.client.transaction()
					.forOperations(this.client.transactionOp().delete().forPath(parent),
							this.client.transactionOp().create().withMode(CreateMode.CONTAINER).forPath(parent),
							this.client.transactionOp()
								.create()
								.withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
								.forPath(parent + "/" + name, data),
							this.client.transactionOp().setData().forPath(parent));
				Stat created = results.get(3).getResultStat();
				if (created == null || !path.equals(results.get(2).getResultPath())) {
					this.backend.deleteInBackground(createdPath(results, path));
					throw new LockBackendException("The zookeeper backend could not confirm the lock node of '" + key
							+ "': the server answered the transaction without its create's result", null);
				}
				stamped(created.getCtime(), sent);
				// The other threads of this process that try the key now need only read the queue.
				this.seen = new SeenHolder(parent, path,
						ZooKeeperLockBackend.saturatedAdd(created.getCtime(), ttlMillis(data)));
				this.backend.hold(owner, key, path, sent, ttl);
				return new Outcome(AcquireResult.acquired(created.getCzxid()), sent);
			}
			catch (KeeperException.NotEmptyException ex) {
				Outcome outcome = notEmpty(key, owner, ttl, parent, name, sent);
				if (outcome != RELEASED) {
					return outcome;
				}
			}
			catch (KeeperException.NoNodeException | KeeperException.NoAuthException
					| KeeperException.UnimplementedException ex) {
				// No parent yet, no right to delete it, or a server without containers: the queue's
				// path, which needs neither. Nothing of the transaction was applied.
				return null;
			}
			catch (InterruptedException ex) {
				this.backend.deleteInBackground(path);
				throw ex;
			}
			catch (LockBackendException ex) {
				throw ex;
			}
			catch (Exception ex) {
				// The outcome is unknown: a node of this attempt may exist, under its known name.
				this.backend.deleteInBackground(path);
				throw this.backend.failure("acquire", key, ex);
			}
			// Released between two reads: take it, if nobody else was faster.
			readFirst = false;
		}
		return null;
	}

	/**
	 * A one-shot transaction failed because the queue is not empty: perhaps because of this
	 * attempt's own node ({@code name} + the first sequence), when the transaction was applied and
	 * Curator retried it after its answer was lost. Reads the queue as {@link #heldOrNull} does;
	 * when the reads fail or are interrupted, the attempt's node, if any, is deleted in the
	 * background, so that an orphan never heads the queue for a lease.
	 */
	@Nullable Outcome notEmpty(String key, String owner, Duration ttl, String parent, String name, long sent)
			throws InterruptedException {
		String path = parent + "/" + name + FIRST_SEQUENCE;
		boolean done = false;
		try {
			List<String> children = children(key, parent);
			Outcome outcome = (children == null) ? null
					: (children.isEmpty()) ? RELEASED
							: heldOrNull(key, owner, ttl, parent, children, name + FIRST_SEQUENCE, sent);
			done = true;
			return outcome;
		}
		finally {
			if (!done) {
				this.backend.deleteInBackground(path);
			}
		}
	}

	/**
	 * The node a transaction's create reported, to delete when its results cannot be trusted: the
	 * path it names, or {@code path}, the name the create asked for, when it names none.
	 */
	static String createdPath(List<CuratorTransactionResult> results, String path) {
		String created = (results.size() > 2) ? results.get(2).getResultPath() : null;
		return (created != null) ? created : path;
	}

	/** The children of {@code parent}, or {@code null} when it does not exist. */
	private @Nullable List<String> children(String key, String parent) throws InterruptedException {
		try {
			return this.client.getChildren().forPath(parent);
		}
		catch (KeeperException.NoNodeException ex) {
			return null;
		}
		catch (InterruptedException ex) {
			throw ex;
		}
		catch (Exception ex) {
			throw this.backend.failure("acquire", key, ex);
		}
	}

	/**
	 * Refuses a one-shot attempt on a queue that is not empty, unless its head is this attempt's
	 * own node ({@code ownName}: its transaction was applied and then retried after a lost
	 * answer; it was sent at {@code ownSent}); {@link #RELEASED} when the head's node is gone by
	 * the time it is read; {@code null} when the holder may have expired.
	 */
	private @Nullable Outcome heldOrNull(String key, String owner, Duration ttl, String parent, List<String> children,
			@Nullable String ownName, long ownSent) throws InterruptedException {
		String head = children.get(0);
		for (String child : children) {
			if (ZooKeeperPaths.sequence(child).compareTo(ZooKeeperPaths.sequence(head)) < 0) {
				head = child;
			}
		}
		String holder = parent + "/" + head;
		SeenHolder seen = this.seen;
		long expiresAt;
		if (ownName == null && seen != null && seen.path().equals(holder)) {
			// Read by this process before: its lease can only have been extended since.
			expiresAt = seen.expiresAt();
		}
		else {
			Stat holderStat = new Stat();
			byte[] holderData;
			try {
				holderData = this.client.getData().storingStatIn(holderStat).forPath(holder);
			}
			catch (KeeperException.NoNodeException ex) {
				return RELEASED;
			}
			catch (InterruptedException ex) {
				throw ex;
			}
			catch (Exception ex) {
				throw this.backend.failure("acquire", key, ex);
			}
			if (head.equals(ownName)) {
				if (holderStat.getEphemeralOwner() != sessionId(key)) {
					// Applied on a session the client has left (the transaction retried on the next
					// one): the server deletes the node when it expires that session.
					throw lostNode(key);
				}
				this.backend.hold(owner, key, holder, ownSent, ttl);
				return new Outcome(AcquireResult.acquired(holderStat.getCzxid()), ownSent);
			}
			if (ownName != null && children.contains(ownName)) {
				// Not possible (it was created in an empty parent); never leave it behind.
				this.backend.deleteInBackground(parent + "/" + ownName);
			}
			expiresAt = ZooKeeperLockBackend.saturatedAdd(holderStat.getMtime(), ttlMillis(holderData));
			this.seen = new SeenHolder(parent, holder, expiresAt);
		}
		EnsembleTime time = this.ensembleTime;
		long now = System.nanoTime();
		if (time == null || now - time.nanos() > ENSEMBLE_TIME_VALID_NANOS) {
			return null;
		}
		long estimatedNow = time.millis() + TimeUnit.NANOSECONDS.toMillis(now - time.nanos());
		if (estimatedNow >= expiresAt) {
			return null;
		}
		return new Outcome(AcquireResult.held(expiresAt - estimatedNow), 0);
	}

	/** Forgets the holder seen last when it is {@code path}, a node this process released. */
	void released(String path) {
		SeenHolder seen = this.seen;
		if (seen != null && seen.path().equals(path)) {
			this.seen = null;
		}
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
	private long takeHead(String key, String path, byte[] data, Duration ttl, long lastWriteNanos, boolean checked)
			throws InterruptedException {
		boolean fresh = System.nanoTime() - lastWriteNanos <= ttl.toNanos() / 100;
		if (fresh && checked) {
			return lastWriteNanos;
		}
		long sent = System.nanoTime();
		Stat stat = (fresh) ? this.backend.call("acquire", key, () -> this.client.checkExists().forPath(path))
				: touch(key, path, data);
		if (stat == null || stat.getEphemeralOwner() != sessionId(key)) {
			throw lostNode(key);
		}
		if (fresh) {
			return lastWriteNanos;
		}
		stamped(stat.getMtime(), sent);
		return sent;
	}

	/** Rewrites this acquisition's own node; its deletion is reported as the node lost. */
	private Stat touch(String key, String path, byte[] data) throws InterruptedException {
		try {
			return this.backend.call("acquire", key, () -> this.client.setData().forPath(path, data));
		}
		catch (LockBackendException ex) {
			if (ex.getCause() instanceof KeeperException.NoNodeException) {
				throw lostNode(key);
			}
			throw ex;
		}
	}

	static LockBackendException lostNode(String key) {
		return new LockBackendException("The zookeeper backend lost its queued node for lock '" + key
				+ "' while acquiring it (session expired, or the node was deleted)", null);
	}

	/** The client's session now (0 while a new one is being established); no request. */
	private long sessionId(String key) throws InterruptedException {
		return this.backend.call("acquire", key, () -> this.client.getZookeeperClient().getZooKeeper().getSessionId());
	}

	/** Remembers the ensemble's time stamped on a write of this process sent at {@code nanos}. */
	private void stamped(long serverMillis, long nanos) {
		EnsembleTime time = this.ensembleTime;
		if (serverMillis > 0 && (time == null || nanos - time.nanos() > 0)) {
			this.ensembleTime = new EnsembleTime(serverMillis, nanos);
		}
	}

	private void deleteExpired(String key, String holder, Stat holderStat) throws InterruptedException {
		try {
			this.client.delete().withVersion(holderStat.getVersion()).forPath(holder);
			if (logger.isDebugEnabled()) {
				logger.debug("Holdfast deleted lock node " + holder + " of lock '" + key
						+ "': its time to live ran out by the ensemble's clock");
			}
		}
		catch (KeeperException.NoNodeException | KeeperException.BadVersionException ex) {
			// Released, or renewed just before: the next read of the queue tells.
		}
		catch (InterruptedException ex) {
			throw ex;
		}
		catch (Exception ex) {
			throw this.backend.failure("acquire", key, ex);
		}
	}

	static byte[] ttlData(Duration ttl) {
		return Long.toString(Math.max(1, ttl.toMillis())).getBytes(StandardCharsets.US_ASCII);
	}

	/** The time to live in a lock node's data; a node that is not ours never expires. */
	static long ttlMillis(byte @Nullable [] data) {
		if (data == null || data.length == 0) {
			return Long.MAX_VALUE;
		}
		try {
			return Long.parseLong(new String(data, StandardCharsets.US_ASCII));
		}
		catch (NumberFormatException ex) {
			return Long.MAX_VALUE;
		}
	}

	/** A holder's node and when its lease runs out by the ensemble's clock, as last read. */
	private record SeenHolder(String parent, String path, long expiresAt) {
	}

	/** A time the ensemble stamped on a write ({@code mtime}), and when that write was sent. */
	private record EnsembleTime(long millis, long nanos) {
	}

}
