package dev.holdfast.zookeeper;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.api.transaction.CuratorTransactionResult;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.WaitQueue.Outcome;

/**
 * The short ways of one attempt ({@code maxWait} zero): a free lock (an empty queue) is taken in
 * one transaction, which replaces the key's parent node only while it has no child and creates
 * the lock node in it; a lock held by another node is refused after reading the queue and the
 * holder's node (the time to live and {@code mtime} that say how long it holds), with nothing
 * written, and a repeated attempt while the same node holds reads only the queue. It keeps the
 * ensemble's time as stamped on the newest write of this process, which judges a holder without a
 * write of its own (to the clock node, outside the parent: ZK-10); when the holder may have
 * expired by that time, the attempt goes the queue's way.
 */
final class ZooKeeperTryOnce {

	/** The queue's read found the holder's node gone: the lock was just released. */
	private static final Outcome RELEASED = new Outcome(AcquireResult.held(0), 0);

	/** The sequence number of the first child of a new parent node. */
	private static final String FIRST_SEQUENCE = "0000000000";

	/**
	 * How long the ensemble's time stamped on a write of this process may serve, moved on by the
	 * local monotonic clock, to tell that a holder has not expired: beyond it an attempt judges by
	 * a write of its own.
	 */
	private static final long ENSEMBLE_TIME_VALID_NANOS = TimeUnit.SECONDS.toNanos(1);

	private final ZooKeeperLockBackend backend;

	private final CuratorFramework client;

	/** The newest ensemble time stamped on a write of this process, or null. */
	private volatile @Nullable EnsembleTime ensembleTime;

	/**
	 * The holder an attempt of this process saw last, or null: one entry, so that a busy
	 * {@code tryAcquire} loop on one key reads only the queue while the same node holds.
	 */
	private volatile @Nullable SeenHolder seen;

	private final ZooKeeperClock clock;

	/** The watch that a read of a held lock's queue leaves while anyone subscribes (ZK-10). */
	final ZooKeeperReleaseWatch releases;

	ZooKeeperTryOnce(ZooKeeperLockBackend backend) {
		this.backend = backend;
		this.client = backend.client();
		this.releases = new ZooKeeperReleaseWatch(backend.path("locks"));
		this.clock = new ZooKeeperClock(backend);
	}

	/**
	 * Takes a free lock, or refuses a held one; {@code null} when neither applies: the parent
	 * node is missing, the queue kept changing, or the holder may have expired. Every request is
	 * answered by {@code deadline} or the attempt fails.
	 */
	@Nullable Outcome tryFreeOrHeld(String key, String owner, Duration ttl, String parent, byte[] data, long deadline)
			throws InterruptedException {
		SeenHolder seen = this.seen;
		// This process last saw this lock held: most likely it still is, and one read tells.
		boolean readFirst = seen != null && seen.parent().equals(parent);
		for (int round = 0; round < 3; round++) {
			if (readFirst) {
				List<String> children = children(key, parent, true, deadline);
				if (children == null) {
					return null;
				}
				if (!children.isEmpty()) {
					Outcome outcome = heldOrNull(key, owner, ttl, parent, children, null, 0, deadline);
					if (outcome != RELEASED) {
						return outcome;
					}
				}
			}
			// Named as Curator's protected mode names its nodes; the replaced parent's first child.
			String name = "_c_" + UUID.randomUUID() + "-" + ZooKeeperLockQueue.LOCK_NODE;
			String path = parent + "/" + name + FIRST_SEQUENCE;
			long sent = System.nanoTime();
			// Deleting the parent succeeds only while it has no child: the queue is empty when this
			// transaction is applied, so its node holds the lock. One write, no read. The parent's
			// setData is there for its Stat (Curator keeps no Stat of a create): the new parent was
			// created by the same transaction, so its czxid and ctime are the node's.
			CompletableFuture<CuratorEvent> answer = this.backend.send("acquire", key, (callback) -> this.client
				.transaction()
				.inBackground(callback)
				.forOperations(this.client.transactionOp().delete().forPath(parent),
						this.client.transactionOp().create().withMode(CreateMode.CONTAINER).forPath(parent),
						this.client.transactionOp()
							.create()
							.withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
							.forPath(parent + "/" + name, data),
						this.client.transactionOp().setData().forPath(parent)));
			CuratorEvent event = this.backend.answerOrDelete(answer, sent, deadline, "acquire", key, path);
			Code code = Code.get(event.getResultCode());
			if (code == Code.OK) {
				List<CuratorTransactionResult> results = event.getOpResults();
				Stat created = (results != null && results.size() > 3) ? results.get(3).getResultStat() : null;
				if (created == null || !path.equals(results.get(2).getResultPath())) {
					this.backend.deleteInBackground((results != null) ? createdPath(results, path) : path);
					throw new LockBackendException("The zookeeper backend could not confirm the lock node of '" + key
							+ "': the server answered the transaction without its create's result", null);
				}
				stamped(created.getCtime(), sent);
				// The other threads of this process that try the key now need only read the queue.
				this.seen = new SeenHolder(parent, path,
						ZooKeeperLockQueue.saturatedAdd(created.getCtime(), ZooKeeperLockQueue.ttlMillis(data)));
				this.backend.hold(owner, key, path, sent, ttl);
				return new Outcome(AcquireResult.acquired(created.getCzxid()), sent);
			}
			if (code == Code.NONODE || code == Code.NOAUTH || code == Code.UNIMPLEMENTED) {
				// No parent yet, no right to delete it, or a server without containers: the queue's
				// path, which needs neither. Nothing of the transaction was applied.
				return null;
			}
			if (code != Code.NOTEMPTY) {
				// The outcome is unknown: a node of this attempt may exist, under its known name.
				this.backend.deleteInBackground(path);
				throw this.backend.failure("acquire", key, event);
			}
			Outcome outcome = notEmpty(key, owner, ttl, parent, name, sent, deadline);
			if (outcome != RELEASED) {
				return outcome;
			}
			// Released between two reads: take it, if nobody else was faster.
			readFirst = false;
		}
		return null;
	}

	/**
	 * A transaction failed because the queue is not empty: perhaps because of this attempt's own
	 * node ({@code name} + the first sequence), when the transaction was applied and Curator retried
	 * it after its answer was lost. Reads the queue as {@link #heldOrNull} does; when the reads fail
	 * or are interrupted, the attempt's node, if any, is deleted in the background, so that an
	 * orphan never heads the queue for a lease.
	 */
	@Nullable Outcome notEmpty(String key, String owner, Duration ttl, String parent, String name, long sent,
			long deadline) throws InterruptedException {
		boolean done = false;
		try {
			List<String> children = children(key, parent, true, deadline);
			Outcome outcome = (children == null) ? null
					: (children.isEmpty()) ? RELEASED
							: heldOrNull(key, owner, ttl, parent, children, name + FIRST_SEQUENCE, sent, deadline);
			done = true;
			return outcome;
		}
		finally {
			if (!done) {
				this.backend.deleteInBackground(parent + "/" + name + FIRST_SEQUENCE);
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

	/**
	 * The children of {@code parent}, or {@code null} when it does not exist; read by an attempt
	 * that may be refused ({@code refusable}), it leaves the release watch while anyone subscribes.
	 */
	@Nullable List<String> children(String key, String parent, boolean refusable, long deadline)
			throws InterruptedException {
		Watcher watcher = refusable ? this.releases.watcher() : null;
		CuratorEvent event = this.backend.request("acquire", key, deadline, (callback) -> (watcher != null)
				? this.client.getChildren().usingWatcher(watcher).inBackground(callback).forPath(parent)
				: this.client.getChildren().inBackground(callback).forPath(parent));
		Code code = Code.get(event.getResultCode());
		if (code == Code.NONODE) {
			return null;
		}
		if (code != Code.OK) {
			throw this.backend.failure("acquire", key, event);
		}
		return event.getChildren();
	}

	/**
	 * Refuses an attempt on a queue that is not empty, unless its head is this attempt's own node
	 * ({@code ownName}: its transaction was applied and then retried after a lost answer; it was
	 * sent at {@code ownSent}); {@link #RELEASED} when the head's node is gone by the time it is
	 * read; {@code null} when the holder may have expired.
	 */
	private @Nullable Outcome heldOrNull(String key, String owner, Duration ttl, String parent, List<String> children,
			@Nullable String ownName, long ownSent, long deadline) throws InterruptedException {
		String head = children.get(0);
		for (String child : children) {
			if (ZooKeeperPaths.sequence(child).compareTo(ZooKeeperPaths.sequence(head)) < 0) {
				head = child;
			}
		}
		String holder = parent + "/" + head;
		SeenHolder seen = this.seen;
		// Read by this process before: its lease can only have been extended since; run out by that
		// read, the holder is read again, since it may have renewed (else a follower of a renewed
		// holder would queue a node at every attempt, firing every follower's watch: ZK-10).
		boolean cached = ownName == null && seen != null && seen.path().equals(holder);
		while (true) {
			long expiresAt;
			if (cached) {
				expiresAt = seen.expiresAt();
			}
			else {
				CuratorEvent event = this.backend.request("acquire", key, deadline,
						(callback) -> this.client.getData().inBackground(callback).forPath(holder));
				Code code = Code.get(event.getResultCode());
				if (code == Code.NONODE) {
					return RELEASED;
				}
				if (code != Code.OK) {
					throw this.backend.failure("acquire", key, event);
				}
				Stat holderStat = event.getStat();
				if (head.equals(ownName)) {
					if (holderStat.getEphemeralOwner() != this.backend.sessionId()) {
						// Applied on a session the client has left (the transaction retried on the
						// next one): the server deletes the node when it expires that session.
						throw ZooKeeperLockQueue.lostNode(key);
					}
					this.backend.hold(owner, key, holder, ownSent, ttl);
					return new Outcome(AcquireResult.acquired(holderStat.getCzxid()), ownSent);
				}
				if (ownName != null && children.contains(ownName)) {
					// Not possible (it was created in an empty parent); never leave it behind.
					this.backend.deleteInBackground(parent + "/" + ownName);
				}
				expiresAt = ZooKeeperLockQueue.saturatedAdd(holderStat.getMtime(),
						ZooKeeperLockQueue.ttlMillis(event.getData()));
				this.seen = new SeenHolder(parent, holder, expiresAt);
			}
			EnsembleTime time = this.ensembleTime;
			long now = System.nanoTime();
			if (time == null || now - time.nanos() > ENSEMBLE_TIME_VALID_NANOS) {
				// Not a write in the parent, which would fire every follower's watch (ZK-10).
				long sent = System.nanoTime();
				time = new EnsembleTime(this.clock.stamp("acquire", key, deadline), sent);
				stamped(time.millis(), sent);
				now = System.nanoTime();
			}
			long estimatedNow = time.millis() + TimeUnit.NANOSECONDS.toMillis(now - time.nanos());
			if (estimatedNow < expiresAt) {
				return new Outcome(AcquireResult.held(expiresAt - estimatedNow), 0);
			}
			if (!cached) {
				return null;
			}
			cached = false;
		}
	}

	/**
	 * A reader's one-shot attempt on a queue headed by a writer (RWL-42): refused as a lock's
	 * attempt is, with nothing written; {@code null} when the writer may have expired or is gone.
	 */
	@Nullable Outcome heldByWriter(String key, String owner, Duration ttl, String parent, List<String> children,
			long deadline) throws InterruptedException {
		Outcome outcome = heldOrNull(key, owner, ttl, parent, children, null, 0, deadline);
		return (outcome == RELEASED) ? null : outcome;
	}

	/** Forgets the holder seen last when it is {@code path}, a node this process released. */
	void released(String path) {
		SeenHolder seen = this.seen;
		if (seen != null && seen.path().equals(path)) {
			this.seen = null;
		}
	}

	/** Remembers the ensemble's time stamped on a write of this process sent at {@code nanos}. */
	void stamped(long serverMillis, long nanos) {
		EnsembleTime time = this.ensembleTime;
		if (serverMillis > 0 && (time == null || nanos - time.nanos() > 0)) {
			this.ensembleTime = new EnsembleTime(serverMillis, nanos);
		}
	}

	/** A holder's node and when its lease runs out by the ensemble's clock, as last read. */
	private record SeenHolder(String parent, String path, long expiresAt) {
	}

	/** A time the ensemble stamped on a write ({@code mtime}), and when that write was sent. */
	private record EnsembleTime(long millis, long nanos) {
	}

}
