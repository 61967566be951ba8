package dev.holdfast.zookeeper;

import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.zookeeper.KeeperException;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockInterruptedException;
import dev.holdfast.spi.HeldLock;

/**
 * The renewal of this process's nodes, locks' and read holds' alike ({@link ZooKeeperLockBackend#renew}):
 * each held node's time to live is rewritten, which moves its {@code mtime}; all requests are sent
 * at once and answered in one round trip. A node that is gone is not renewed.
 */
final class ZooKeeperRenewal {

	private final ZooKeeperLockBackend backend;

	private final ConcurrentHashMap<String, ZooKeeperHold> holds;

	private final ZooKeeperSession session;

	ZooKeeperRenewal(ZooKeeperLockBackend backend, ConcurrentHashMap<String, ZooKeeperHold> holds,
			ZooKeeperSession session) {
		this.backend = backend;
		this.holds = holds;
		this.session = session;
	}

	Set<String> renew(Collection<HeldLock> locks) {
		String first = locks.isEmpty() ? "" : locks.iterator().next().key();
		try {
			this.backend.awaitConnected("renew", first);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(first, ex);
		}
		long start = System.nanoTime();
		Map<HeldLock, CompletableFuture<Integer>> answers = new LinkedHashMap<>();
		Map<HeldLock, ZooKeeperHold> sentFor = new HashMap<>();
		for (HeldLock lock : locks) {
			ZooKeeperHold hold = this.holds.get(lock.owner());
			if (hold == null || !hold.key.equals(lock.key())) {
				continue;
			}
			CompletableFuture<Integer> answer = new CompletableFuture<>();
			answers.put(lock, answer);
			sentFor.put(lock, hold);
			try {
				this.backend.client().setData()
					.inBackground((client, event) -> answer.complete(event.getResultCode()))
					.forPath(hold.path, ZooKeeperLockQueue.ttlData(lock.ttl(), lock.owner()));
			}
			catch (Exception ex) {
				answer.completeExceptionally(ex);
			}
		}
		Set<String> renewed = new HashSet<>();
		long deadline = start + this.backend.connectionTimeoutNanos();
		for (Map.Entry<HeldLock, CompletableFuture<Integer>> entry : answers.entrySet()) {
			HeldLock lock = entry.getKey();
			int code = this.backend.awaitUninterruptibly(entry.getValue(), start, deadline, "renew", lock.key());
			ZooKeeperHold hold = sentFor.get(lock);
			if (code == KeeperException.Code.OK.intValue()) {
				hold.confirmed(start, lock.ttl().toNanos());
				this.session.confirmed(start);
				renewed.add(lock.key());
			}
			else if (code == KeeperException.Code.NONODE.intValue()) {
				// Only the node this answer is about: its owner may hold another one by now (a join's new take).
				this.holds.remove(lock.owner(), hold);
			}
			else {
				throw new LockBackendException("The zookeeper backend failed to renew lock '" + lock.key() + "': "
						+ KeeperException.Code.get(code), null);
			}
		}
		return renewed;
	}

}
