package dev.holdfast.redlock;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import dev.holdfast.spi.AcquireResult;

import static dev.holdfast.redlock.RedlockScripts.bytes;
import static dev.holdfast.redlock.RedlockScripts.isGranted;
import static dev.holdfast.redlock.RedlockScripts.isOne;
import static dev.holdfast.redlock.RedlockScripts.tokenOf;

/**
 * The acquisitions of a Redlock backend (see {@link RedlockLockBackend}): one attempt sent to every
 * node at once, the fencing token written back to a quorum when needed, and what the attempt's
 * requests leave on the nodes taken back: after a failed or interrupted attempt, and on the nodes
 * that answer only after it returned, so that no copy of a lock outlives its owner's release.
 */
final class Acquisitions {

	private static final Log logger = LogFactory.getLog(RedlockLockBackend.class);

	private static final int MAX_LATE_ACQUIRES = 10_000;

	private static final byte[] TWO_KEYS = bytes(2);

	private static final byte[] FENCE_RETENTION = bytes(RedlockLockBackend.FENCE_RETENTION_MILLIS);

	private final RedlockNodes nodes;

	private final int quorum;

	private final RedlockSettings settings;

	private final long nodeTimeoutNanos;

	// Acquisitions that returned before every node had answered, by "<key> <owner>", until the
	// last node answers (at most the node timeout). A release also releases on those nodes once
	// they answer: sent on another connection, it could otherwise overtake the late acquire
	// request and leave a lock behind on that node for its whole time to live.
	private final Map<String, Round> lateAcquires = new ConcurrentHashMap<>();

	Acquisitions(RedlockNodes nodes, RedlockSettings settings) {
		this.nodes = nodes;
		this.quorum = nodes.quorum();
		this.settings = settings;
		this.nodeTimeoutNanos = settings.nodeTimeout().toNanos();
	}

	/**
	 * One attempt, as {@link RedlockLockBackend#tryAcquire} describes it, for a checked key, owner
	 * and time to live, with the drift allowance of that time to live.
	 */
	AcquireResult acquire(String key, String owner, Duration ttl, long driftNanos) {
		long ttlNanos = ttl.toNanos();
		Object[] params = { TWO_KEYS, bytes(key), bytes(key + RedlockLockBackend.FENCE_SUFFIX), bytes(owner),
				bytes(ttl.toMillis()), FENCE_RETENTION };
		long start = System.nanoTime();
		Round round = Round.send(this.nodes.list(), (node) -> node.connection().eval(RedlockScripts.ACQUIRE, params),
				this::acquireDecided);
		if (!awaitOrAbandon(round, round, start + this.nodeTimeoutNanos, key, owner)) {
			return AcquireResult.held(0);
		}
		int granted = 0;
		int held = 0;
		long token = 0;
		long holderRemaining = -1;
		for (int i = 0; i < this.nodes.size(); i++) {
			if (round.result(i) instanceof List<?> reply) {
				long value = ((Number) reply.get(1)).longValue();
				if (isGranted(reply)) {
					granted++;
					token = Math.max(token, value);
				}
				else {
					held++;
					holderRemaining = Math.max(holderRemaining, value);
				}
			}
		}
		if (granted >= this.quorum) {
			long fencingToken = token;
			boolean stored = round.count((reply) -> isGranted(reply) && tokenOf(reply) == fencingToken) >= this.quorum
					|| storeToken(round, key, owner, fencingToken, start + ttlNanos - driftNanos);
			if (stored && System.nanoTime() - start + driftNanos < ttlNanos) {
				trackLateNodes(round, key, owner);
				return AcquireResult.acquired(fencingToken);
			}
			if (Thread.currentThread().isInterrupted()) {
				return AcquireResult.held(0);
			}
		}
		releaseAfterFailedAttempt(round, key, owner);
		if (granted + held < this.quorum) {
			throw round.unreachable("acquiring '" + key + "'", this.quorum, this.settings.nodeTimeout());
		}
		return AcquireResult.held(Math.max(holderRemaining, 0));
	}

	// Raises the counter on the nodes that granted to the token; true when a quorum accepted
	// within the lock's validity.
	private boolean storeToken(Round acquire, String key, String owner, long token, long validUntil) {
		List<Node> granted = new ArrayList<>();
		for (int i = 0; i < this.nodes.size(); i++) {
			if (acquire.result(i) instanceof List<?> reply && isGranted(reply)) {
				granted.add(this.nodes.get(i));
			}
		}
		Object[] params = { TWO_KEYS, bytes(key), bytes(key + RedlockLockBackend.FENCE_SUFFIX), bytes(owner),
				bytes(token), FENCE_RETENTION };
		Round round = Round.send(granted, (node) -> node.connection().eval(RedlockScripts.FENCE, params),
				(r) -> r.count(RedlockScripts::isOne) >= this.quorum
						|| r.count((reply) -> !isOne(reply)) + r.failed() > granted.size() - this.quorum);
		long deadline = Math.min(System.nanoTime() + this.nodeTimeoutNanos, validUntil);
		return awaitOrAbandon(round, acquire, deadline, key, owner)
				&& round.count(RedlockScripts::isOne) >= this.quorum;
	}

	// The outcome of an acquire round is known once it is acquired (a quorum granted), certainly
	// unreachable (too many failures for a quorum to answer) or held: a quorum answered, and the
	// nodes still pending that are worth waiting for cannot make up a quorum of grants. A node
	// that did not answer its last request in time is not waited for here: when contenders split
	// the live nodes, waiting for a paused node would keep every contender's partial grants for a
	// whole node timeout, and they would all retry at once and split again.
	private boolean acquireDecided(Round round) {
		int granted = round.count(RedlockScripts::isGranted);
		int replied = round.answered();
		int failed = round.failed();
		return granted >= this.quorum || failed > this.nodes.size() - this.quorum
				|| (replied >= this.quorum && granted + round.pendingResponsive() < this.quorum);
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
		Object[] params = RedlockLockBackend.releaseParams(key, owner, this.nodes.releaseChannel());
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
			node.connection()
				.eval(RedlockScripts.RELEASE, RedlockLockBackend.releaseParams(key, owner, this.nodes.releaseChannel()));
		}
		catch (RuntimeException ex) {
			logger.debug("Could not send release of '" + key + "' to " + node.name(), ex);
		}
	}

}
