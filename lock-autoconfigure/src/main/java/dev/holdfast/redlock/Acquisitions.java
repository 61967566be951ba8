package dev.holdfast.redlock;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import static dev.holdfast.redlock.RedlockScripts.isGranted;

/**
 * Takes back what an acquisition's requests leave on the nodes: after a failed or interrupted
 * attempt, and on the nodes that answer an acquisition only after it returned, so that no copy of
 * a lock outlives its owner's release.
 */
final class Leftovers {

	private static final Log logger = LogFactory.getLog(RedlockLockBackend.class);

	private static final int MAX_LATE_ACQUIRES = 10_000;

	private final RedlockNodes nodes;

	private final long nodeTimeoutNanos;

	// Acquisitions that returned before every node had answered, by "<key> <owner>", until the
	// last node answers (at most the node timeout). A release also releases on those nodes once
	// they answer: sent on another connection, it could otherwise overtake the late acquire
	// request and leave a lock behind on that node for its whole time to live.
	private final Map<String, Round> lateAcquires = new ConcurrentHashMap<>();

	Leftovers(RedlockNodes nodes, long nodeTimeoutNanos) {
		this.nodes = nodes;
		this.nodeTimeoutNanos = nodeTimeoutNanos;
	}

	/** Releases on the nodes that had not answered an acquisition when it returned, once they answer. */
	void releaseLate(String key, String owner) {
		Round late = this.lateAcquires.remove(key + " " + owner);
		if (late != null) {
			late.whenEachCompletes((node) -> sendRelease(node, key, owner));
		}
	}

	// Waits for a round of an acquisition. When the caller is interrupted, takes back whatever the
	// acquisition's requests take, without waiting for it, sets the interrupt flag again and
	// returns false: the attempt then reports the lock as not acquired, and the engine ends the
	// wait with its own interruption handling.
	boolean awaitOrAbandon(Round round, Round acquire, long deadline, String key, String owner) {
		try {
			round.await(deadline);
			return true;
		}
		catch (InterruptedException ex) {
			for (Node node : this.nodes.list()) {
				sendRelease(node, key, owner);
			}
			acquire.whenEachCompletes((node) -> sendRelease(node, key, owner));
			Thread.currentThread().interrupt();
			return false;
		}
	}

	// Releases on every node that may hold the key for this owner, and waits (bounded) for the
	// answers, so that a failed attempt leaves nothing behind that would block the next one.
	void releaseAfterFailedAttempt(Round acquire, String key, String owner) {
		List<Node> targets = new ArrayList<>();
		for (int i = 0; i < this.nodes.size(); i++) {
			Object result = acquire.result(i);
			if (result == null) {
				// Still in flight: release once it lands, whatever it did.
				acquire.whenCompletes(i, (node) -> sendRelease(node, key, owner));
			}
			else if (!(result instanceof List<?> reply && !isGranted(reply))) {
				targets.add(this.nodes.get(i));
			}
		}
		if (targets.isEmpty()) {
			return;
		}
		long start = System.nanoTime();
		Object[] params = RedlockLockBackend.releaseParams(key, owner);
		Round release = Round.send(targets, (node) -> node.connection().eval(RedlockScripts.RELEASE, params),
				(r) -> false);
		awaitOrAbandon(release, acquire, start + this.nodeTimeoutNanos, key, owner);
	}

	/** Remembers an acquisition that returned before every node answered, until they all have. */
	void trackLateNodes(Round round, String key, String owner) {
		if (round.pending() == 0) {
			return;
		}
		String id = key + " " + owner;
		if (this.lateAcquires.size() < MAX_LATE_ACQUIRES) {
			this.lateAcquires.put(id, round);
			round.whenAllComplete(() -> this.lateAcquires.remove(id, round));
		}
	}

	/** Sends an owner-checked release to one node, without waiting for the answer. */
	void sendRelease(Node node, String key, String owner) {
		try {
			node.connection().eval(RedlockScripts.RELEASE, RedlockLockBackend.releaseParams(key, owner));
		}
		catch (RuntimeException ex) {
			logger.debug("Could not send release of '" + key + "' to " + node.name(), ex);
		}
	}

}
