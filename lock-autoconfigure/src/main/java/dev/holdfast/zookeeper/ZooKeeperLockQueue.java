package dev.holdfast.zookeeper;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.curator.framework.CuratorFramework;
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
 */
final class ZooKeeperLockQueue {

	private static final Log logger = LogFactory.getLog(ZooKeeperLockBackend.class);

	private static final String LOCK_NODE = "lock-";

	private final ZooKeeperLockBackend backend;

	private final CuratorFramework client;

	private final String locksPath;

	/** The lock nodes of this process, by owner token (the backend's map). */
	private final ConcurrentHashMap<String, ZooKeeperHold> holds;

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
		Stat own = new Stat();
		String path = this.backend.call("acquire", key, () -> this.client.create()
			.storingStatIn(own)
			.creatingParentContainersIfNeeded()
			.withProtection()
			.withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
			.forPath(parent + "/" + LOCK_NODE, data));
		String node = ZooKeeperPaths.nodeName(path);
		if (own.getCzxid() == 0) {
			// Found again by protected mode after a connection loss: the create's Stat was not filled.
			Stat found = this.backend.call("acquire", key, () -> this.client.checkExists().forPath(path));
			if (found != null) {
				own.setCzxid(found.getCzxid());
				own.setCtime(found.getCtime());
				own.setMtime(found.getMtime());
			}
		}
		long serverTime = own.getMtime();
		long serverTimeNanos = attemptStart;
		// A waiter keeps its node fresh, as a holder does, so that it is never judged expired
		// in the moment between becoming the head of the queue and taking the hold.
		long touchEveryNanos = Math.max(1, ttl.toNanos() / 3);
		boolean waited = false;
		boolean acquired = false;
		try {
			while (true) {
				List<String> children = this.backend.call("acquire", key,
						() -> this.client.getChildren().forPath(parent));
				children.sort(Comparator.comparing(ZooKeeperPaths::sequence));
				int index = children.indexOf(node);
				if (index < 0) {
					throw new LockBackendException("The zookeeper backend lost its queued node for lock '" + key
							+ "' while acquiring it (session expired, or the node was deleted)", null);
				}
				if (index == 0) {
					long confirmed = serverTimeNanos;
					if (waited) {
						// The hold starts now: the ensemble counts its time to live from this write.
						confirmed = System.nanoTime();
						this.backend.call("acquire", key, () -> this.client.setData().forPath(path, data));
					}
					this.holds.put(owner, new ZooKeeperHold(key, path, confirmed, ttl.toNanos()));
					acquired = true;
					return new Outcome(AcquireResult.acquired(own.getCzxid()), confirmed);
				}
				String holder = parent + "/" + children.get(0);
				String predecessor = parent + "/" + children.get(index - 1);
				CountDownLatch turn = new CountDownLatch(1);
				Watcher watcher = (event) -> turn.countDown();
				long holderRemaining = -1;
				if (index == 1 || oneShot) {
					Stat holderStat = new Stat();
					byte[] holderData;
					try {
						holderData = (oneShot) ? this.client.getData().storingStatIn(holderStat).forPath(holder)
								: this.client.getData().storingStatIn(holderStat).usingWatcher(watcher).forPath(holder);
					}
					catch (KeeperException.NoNodeException ex) {
						continue;
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
						serverTime = this.backend.call("acquire", key, () -> this.client.setData().forPath(path, data))
							.getMtime();
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
					serverTime = this.backend.call("acquire", key, () -> this.client.setData().forPath(path, data))
						.getMtime();
				}
				if (index > 1 && this.backend.call("acquire", key,
						() -> this.client.checkExists().usingWatcher(watcher).forPath(predecessor)) == null) {
					continue;
				}
				long sleep = Math.min(remaining, serverTimeNanos + touchEveryNanos - System.nanoTime());
				if (holderRemaining >= 0) {
					sleep = Math.min(sleep, TimeUnit.MILLISECONDS.toNanos(holderRemaining + 1));
				}
				turn.await(sleep, TimeUnit.NANOSECONDS);
				waited = true;
			}
		}
		finally {
			if (!acquired) {
				this.backend.deleteInBackground(path);
			}
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

}
