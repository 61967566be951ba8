package dev.holdfast.zookeeper;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.WaitQueue.Outcome;

/**
 * Read holds (RWL-40 to RWL-45): a reader's node {@code …-read-<seq>} sits in the key's queue
 * beside the writers' nodes and holds while no writer node has a lower sequence; a writer's holds
 * when it is the lowest. The wait itself is {@link ZooKeeperLockQueue}'s, which asks
 * {@link #behind} what a node waits for; here are the reader's one-shot checks and the join of a
 * hold its owner already has. Once held, a reader's node is kept, renewed, released and lost as a
 * lock's (the node is the lease), with its {@code czxid} for token.
 */
final class ZooKeeperReadHolds {

	/** The name of a reader's node before its sequence, as {@link ZooKeeperLockQueue#LOCK_NODE} is a writer's. */
	static final String READ_NODE = "read-";

	private final ZooKeeperLockBackend backend;

	private final CuratorFramework client;

	private final ZooKeeperTryOnce once;

	private final ZooKeeperLockQueue queue;

	private final ZooKeeperSession session;

	private final String locksPath;

	ZooKeeperReadHolds(ZooKeeperLockBackend backend, ZooKeeperTryOnce once, ZooKeeperLockQueue queue,
			ZooKeeperSession session) {
		this.backend = backend;
		this.client = backend.client();
		this.once = once;
		this.queue = queue;
		this.session = session;
		this.locksPath = backend.path("locks");
	}

	/**
	 * The node that the node at {@code index} of the sorted queue waits behind, or {@code null}
	 * when it holds (RWL-40, RWL-41): a writer's predecessor; a reader's nearest lower writer.
	 * @param sorted the queue's node names, by sequence
	 */
	static @Nullable Behind behind(List<String> sorted, int index, boolean reader) {
		if (!reader) {
			if (index == 0) {
				return null;
			}
			String node = sorted.get(index - 1);
			boolean holds = true;
			for (int i = 0; i < index && holds; i++) {
				holds = i == 0 || ZooKeeperPaths.reader(sorted.get(i));
			}
			// The head holds; so does a reader with readers alone below it.
			return new Behind(node, index == 1 || (holds && ZooKeeperPaths.reader(sorted.get(0))), index == 1);
		}
		for (int i = index - 1; i >= 0; i--) {
			if (!ZooKeeperPaths.reader(sorted.get(i))) {
				return new Behind(sorted.get(i), i == 0, i == 0);
			}
		}
		return null;
	}

	/**
	 * A read hold for {@code owner}: a join when the owner already holds the key's reader node,
	 * else a reader's node queued, once ({@code maxWait} zero, after the checks of RWL-42) or
	 * waiting until {@code maxWait} past {@code attemptStart}. The caller has waited for the connection.
	 */
	Outcome acquire(String key, String owner, Duration ttl, Duration maxWait, long attemptStart)
			throws InterruptedException {
		boolean oneShot = maxWait.isZero() || maxWait.isNegative();
		long waitEnd = attemptStart + (oneShot ? 0 : maxWait.toNanos());
		long deadline = waitEnd + this.backend.connectionTimeoutNanos();
		String parent = this.locksPath + "/" + ZooKeeperPaths.encode(key);
		ZooKeeperHold hold = this.backend.heldBy(owner);
		if (hold != null && hold.key.equals(key) && ZooKeeperPaths.reader(ZooKeeperPaths.nodeName(hold.path))) {
			Outcome joined = join(key, owner, hold, ttl, parent, waitEnd, deadline);
			if (joined != null) {
				return joined;
			}
			// Released here while the join waited: a first take, for the rest of the wait.
		}
		if (oneShot) {
			List<String> children = sorted(this.once.children(key, parent, false, deadline));
			int writer = firstWriter(children);
			if (writer == 0) {
				// Write-held: refused as a lock's attempt is, with nothing written; or null when
				// the writer may have expired or just went: the queue's way, which judges it.
				Outcome refused = this.once.heldByWriter(key, owner, ttl, parent, children, deadline);
				if (refused != null) {
					return refused;
				}
			}
			else if (writer > 0) {
				// A writer waits: new readers wait for it (writer preference).
				return new Outcome(AcquireResult.held(-1), 0);
			}
		}
		return this.queue.acquire(key, owner, ttl, maxWait, attemptStart, true);
	}

	/**
	 * Another take of the read hold {@code hold}, by its owner (RWL-42): granted with the hold's
	 * token while no writer node is queued (it would be behind the hold, waiting for it); else it
	 * waits for the writers to go until {@code waitEnd}. Creates nothing; a longer {@code ttl} than
	 * the node's is written to it before the grant (never a shorter one). Returns {@code null} when
	 * the hold was released here meanwhile (its node gone or going): the caller takes anew (RWL-46).
	 */
	private @Nullable Outcome join(String key, String owner, ZooKeeperHold hold, Duration ttl, String parent,
			long waitEnd, long deadline) throws InterruptedException {
		String own = ZooKeeperPaths.nodeName(hold.path);
		long session = this.backend.sessionId();
		long losses = this.session.losses();
		boolean waited = false;
		while (true) {
			if (waited && waitEnd - System.nanoTime() <= 0) {
				// The wait ran out: no request after it (ZK-9).
				return new Outcome(AcquireResult.held(-1), 0);
			}
			try {
				List<String> children = sorted(this.once.children(key, parent, false, deadline));
				if (!children.contains(own)) {
					return released(key, owner, hold);
				}
				int writer = firstWriter(children);
				if (writer < 0) {
					return grant(key, owner, hold, ttl, deadline);
				}
				if (waitEnd - System.nanoTime() <= 0) {
					return new Outcome(AcquireResult.held(-1), 0);
				}
				CountDownLatch gone = new CountDownLatch(1);
				Watcher watcher = (event) -> gone.countDown();
				String writerPath = parent + "/" + children.get(writer);
				CuratorEvent watched = this.backend.request("acquire", key, deadline,
						(callback) -> this.client.checkExists().usingWatcher(watcher).inBackground(callback).forPath(writerPath));
				if (watched.getResultCode() == Code.OK.intValue()) {
					gone.await(Math.max(0, waitEnd - System.nanoTime()), TimeUnit.NANOSECONDS);
				}
			}
			catch (LockBackendException ex) {
				// ZK-11: a request lost with the connection; the next pass lists the queue again.
				this.queue.reconnected(key, ex, session, losses, waitEnd);
			}
			waited = true;
		}
	}

	/**
	 * The join's grant: a read of the node, or the write of the longer {@code ttl} (which also
	 * moves its {@code mtime}); either confirms the node is alive on this session.
	 */
	private @Nullable Outcome grant(String key, String owner, ZooKeeperHold hold, Duration ttl, long deadline)
			throws InterruptedException {
		boolean longer = ttl.toNanos() > hold.ttlNanos;
		long sent = System.nanoTime();
		CuratorEvent read = this.backend.request("acquire", key, deadline, (callback) -> longer
				? this.client.setData().inBackground(callback).forPath(hold.path, ZooKeeperLockQueue.ttlData(ttl, owner))
				: this.client.checkExists().inBackground(callback).forPath(hold.path));
		Stat stat = read.getStat();
		if (read.getResultCode() == Code.NONODE.intValue()) {
			return released(key, owner, hold);
		}
		if (read.getResultCode() != Code.OK.intValue() || stat == null
				|| stat.getEphemeralOwner() != this.backend.sessionId()) {
			throw ZooKeeperLockQueue.lostNode(key);
		}
		if (longer) {
			hold.confirmed(sent, ttl.toNanos());
		}
		return new Outcome(AcquireResult.acquired(stat.getCzxid()), hold.confirmedNanos);
	}

	/**
	 * The join's node is gone, released here or lost (a forced release, an expired session): either
	 * way {@code null}, and the caller takes anew. A new node has a new token, by which the engine
	 * tells a lost read lease from its own (RWL-15) and releases the owner again.
	 */
	private @Nullable Outcome released(String key, String owner, ZooKeeperHold hold) {
		return null;
	}

	private static List<String> sorted(@Nullable List<String> children) {
		List<String> sorted = new ArrayList<>((children != null) ? children : List.of());
		sorted.sort(Comparator.comparing(ZooKeeperPaths::sequence));
		return sorted;
	}

	/** The index of the lowest writer node of a sorted queue, or -1. */
	private static int firstWriter(List<String> sorted) {
		for (int i = 0; i < sorted.size(); i++) {
			if (!ZooKeeperPaths.reader(sorted.get(i))) {
				return i;
			}
		}
		return -1;
	}

	/**
	 * What a node of the queue waits behind.
	 * @param node the node it watches
	 * @param holds whether that node holds, so that its expiry is judged (ZK-2)
	 * @param only whether that node is the only one in the way: its deletion hands the hold on
	 */
	record Behind(String node, boolean holds, boolean only) {
	}

}
