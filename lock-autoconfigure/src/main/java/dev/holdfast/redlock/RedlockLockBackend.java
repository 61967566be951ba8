package dev.holdfast.redlock;

import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.redisson.api.RedissonClient;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.BackendHealth;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.TickClaims;

import static dev.holdfast.redlock.RedlockScripts.bytes;
import static dev.holdfast.redlock.RedlockScripts.isOne;
import static dev.holdfast.redlock.RedlockScripts.renewedCounts;

/**
 * A lock held on a majority of N independent Redis masters: the Redlock algorithm, on one
 * Redisson client per node; the scripts go over one pipelined connection per node made like that
 * client's ({@link NodeConnection}), all on one I/O thread of the backend, which writes the
 * requests of a round (and of concurrent rounds) together, one flush per node ({@link RedlockIo}).
 * <p>
 * <b>Acquisition.</b> One attempt sends an owner-checked set-if-absent with the time to live to
 * all N nodes at once, and waits at most the node timeout. The lock is acquired when a quorum of
 * {@code N / 2 + 1} nodes granted it, the quorum being fixed by the number of configured nodes
 * and never shrunk to the nodes that happen to answer, and when the validity
 * {@code ttl - elapsed - drift} is still positive, elapsed and validity measured on this JVM's
 * monotonic clock ({@link System#nanoTime()}) from before the first request was sent. An attempt
 * that fails releases what it took on every node before it returns (owner-checked, so it never
 * deletes another owner's lock). When fewer than a quorum of nodes answer at all, the attempt
 * fails closed with {@link LockBackendException}; when enough answer but the lock is held, it
 * returns {@link AcquireResult#held(long)} with the longest remaining time to live reported.
 * <p>
 * <b>Reentrancy.</b> Not reentrant: a second attempt with a different owner token fails while
 * the lock is held. An attempt with the owner token that already holds a node's key takes that
 * node again, so that a retry after a partial failure is not blocked by its own leftovers.
 * <p>
 * <b>Expiry.</b> Each node's own clock expires its copy of the lock ({@code PX}). The client
 * counts the lock as held only for {@code ttl - drift} from the moment before it sent its
 * requests (and gives the engine the same drift, {@link #clockDriftAllowance}, so that a lease is
 * valid no longer), so the lock is safe as long as every node's clock runs at most
 * {@code drift / ttl} faster than this JVM's monotonic clock, and nodes keep their keys across
 * restarts (append-only file with {@code appendfsync always}) or stay down for longer than the
 * longest time to live after a crash. Without either, a restarted node forgets the lock and a
 * second client can build a quorum with it: the startup check warns about nodes configured that
 * way.
 * <p>
 * <b>Release and renewal</b> go to all nodes in parallel; a release returns once a quorum has
 * deleted the lock, and a renewal counts only when a quorum renewed within the validity of the
 * new time to live. Renewal is batched: one script call per node for all the locks being renewed.
 * An acquisition returns as soon as a quorum granted; a release of it is also sent to the nodes
 * that had not answered yet once they answer, so that a late acquire request cannot leave a copy
 * behind. A node paused past the node timeout may still apply a request late; such a copy, on a
 * minority of nodes, lives until its time to live ends and delays nobody beyond that.
 * <p>
 * <b>Interruption.</b> An interrupted caller stops waiting at once; what its requests take is
 * released as they land, and the attempt reports the lock as not acquired with the interrupt
 * flag set.
 * <p>
 * <b>Waiting.</b> This backend never waits for a held lock: the engine above it retries with
 * jitter. A release publishes the key on every node ({@link ReleaseEvents}), so waiters wake up
 * promptly; one release reaches a subscriber once, not once per node.
 * <p>
 * <b>Fencing tokens.</b> Every node keeps a counter per lock. The acquire script on a node, when
 * it grants the lock, computes {@code c = max(counter + 1, floor)}, where {@code floor} is the
 * node's {@code TIME} in microseconds truncated to the millisecond, stores {@code c} and returns
 * it. The client takes {@code T}, the largest {@code c} of the nodes that granted, and before
 * the lock counts as acquired makes sure that a quorum of nodes stores a counter of at least
 * {@code T}: when fewer than a quorum already returned exactly {@code T}, it writes {@code T} to
 * the nodes that granted, owner-checked (a node accepts only while it still holds this owner's
 * lock), in a second round trip, and fails the attempt unless a quorum accepted. The token is
 * {@code T}.
 * <p>
 * Why successive holders get strictly increasing tokens: let A acquire with token
 * {@code T_A}, and let B be a later holder. A quorum W of nodes stored at least {@code T_A} while
 * A's key was present on them. B's quorum intersects W (any two majorities of the same N nodes
 * intersect) in some node n. B's key could be set on n only after A's key left n, hence after n
 * stored {@code T_A}; so n's counter is at least {@code T_A} when B's script runs, n returns at
 * least {@code T_A + 1}, and {@code T_B >= T_A + 1}. This rests on: (1) mutual exclusion itself
 * (bounded clock drift as above, so that A's and B's quorums are not held at the same time); (2)
 * n still remembering its counter, i.e. n persisted it, or, if n restarted without persistence,
 * the time floor: n's clock at B's acquisition is past A's token, which holds while node clocks
 * never step back and differ by less than the time between two acquisitions of one lock. Without
 * the second round trip the argument fails: the intersection node may hold only its own, smaller
 * counter while {@code T_A} came from another node. The counters expire one day after the last
 * acquisition; after that the time floor alone orders tokens.
 * <p>
 * Keys: the lock lives at the given key on every node, its counter at the key followed by
 * {@code {fence}}, a scheduled job's last claimed tick at the key followed by {@code {tick}};
 * keys built by Holdfast's engine never contain {@code {}, so neither can meet another lock's
 * key.
 */
public final class RedlockLockBackend
		implements LockBackend, LeaseRenewal, ReleaseEvents, BackendHealth, TickClaims, AutoCloseable {

	private static final Log logger = LogFactory.getLog(RedlockLockBackend.class);

	static final String FENCE_SUFFIX = "{fence}";

	static final String TICK_SUFFIX = "{tick}";

	/** Ids of tick claims, unique across instances. */
	private static final SecureRandom CLAIM_IDS = new SecureRandom();

	static final long FENCE_RETENTION_MILLIS = Duration.ofDays(1).toMillis();

	private static final int MAX_KEY_LENGTH = 1024;

	private static final byte[] ONE_KEY = bytes(1);

	private final RedlockNodes nodes;

	private final int quorum;

	private final RedlockSettings settings;

	private final long nodeTimeoutNanos;

	private final Acquisitions acquisitions;

	/** The open release subscriptions, one per template in practice. */
	private final List<RedlockReleaseEvents> subscriptions = new CopyOnWriteArrayList<>();

	/**
	 * Creates a backend over clients that the caller owns and closes.
	 * @param clients one client per node, each connected to one independent Redis master
	 * (single-server configuration); the quorum is {@code clients.size() / 2 + 1}. The backend
	 * opens one more connection per node like the client's, on an I/O thread of its own, and closes
	 * them on {@link #close()}. Close the backend before the clients: a connection that the backend
	 * opens again after a client was shut down is opened with that client's stopped timer, and
	 * fails only after the connect timeout plus the command timeout, when it fails at all
	 * @throws IllegalArgumentException when a client is not a single-server Redisson client
	 * @param settings the timing of the algorithm
	 */
	public RedlockLockBackend(List<RedissonClient> clients, RedlockSettings settings) {
		this(RedlockNodes.of(clients, settings), settings);
	}

	private RedlockLockBackend(RedlockNodes nodes, RedlockSettings settings) {
		this.nodes = nodes;
		this.quorum = nodes.quorum();
		this.settings = settings;
		this.nodeTimeoutNanos = settings.nodeTimeout().toNanos();
		this.acquisitions = new Acquisitions(nodes, settings);
	}

	/**
	 * Connects to the given nodes, one Redisson client each, sharing one small event loop; the
	 * backend owns the clients and shuts them down on {@link #close()}. Connections are made
	 * lazily, so a node that is down at startup does not prevent the backend from starting.
	 * @param addresses {@code redis://host:port} or {@code rediss://host:port} (TLS), one per
	 * independent master, each node once
	 * @param username the ACL user name on every node, or {@code null}
	 * @param password the password on every node, or {@code null}
	 * @param connectTimeout how long establishing one connection may take
	 * @param settings the timing of the algorithm
	 * @throws IllegalArgumentException naming an address that is malformed or repeated
	 */
	public static RedlockLockBackend connect(List<String> addresses, @Nullable String username,
			@Nullable String password, Duration connectTimeout, RedlockSettings settings) {
		return new RedlockLockBackend(RedlockNodes.connect(addresses, username, password, connectTimeout, settings),
				settings);
	}

	@Override
	public String name() {
		return "redlock";
	}

	/** The number of configured nodes. */
	public int nodeCount() {
		return this.nodes.size();
	}

	/**
	 * The drift allowance of the settings, {@code ttl * driftFactor + minDrift}: the engine counts
	 * a lease valid for no longer than this backend counts the lock acquired or renewed.
	 */
	@Override
	public Duration clockDriftAllowance(Duration ttl) {
		return Duration.ofNanos(this.settings.driftNanos(ttl));
	}

	/** The number of nodes that must agree: {@code nodeCount() / 2 + 1}. */
	public int quorum() {
		return this.quorum;
	}

	/** The timing this backend runs with. */
	public RedlockSettings settings() {
		return this.settings;
	}

	/** The configured nodes, without credentials, in configuration order. */
	public List<String> nodeNames() {
		return this.nodes.list().stream().map(Node::name).toList();
	}

	/**
	 * Takes the lock on a quorum of nodes, in one attempt bounded by the node timeout (plus one
	 * more node timeout when the fencing token has to be written back).
	 * @return acquired with the fencing token, or held with the longest remaining time to live a
	 * node reported; an interrupted caller gets "held" at once, with its interrupt flag set, and
	 * what the attempt's requests take is released as they land
	 * @throws LockBackendException when fewer than a quorum of nodes answered; the attempt then
	 * released what it took
	 * @throws IllegalArgumentException when {@code ttl} is not longer than the drift allowance
	 */
	@Override
	public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
		checkKey(key);
		checkOwner(owner);
		long driftNanos = this.settings.driftNanos(ttl);
		if (ttl.toNanos() <= driftNanos || ttl.toMillis() < 1) {
			throw new IllegalArgumentException("Lease time " + ttl + " is too short for Redlock: it must exceed the "
					+ "clock drift allowance of " + Duration.ofNanos(driftNanos)
					+ " (holdfast.redlock.drift-factor and holdfast.redlock.min-drift)");
		}
		return this.acquisitions.acquire(key, owner, ttl, driftNanos);
	}

	/**
	 * Deletes the lock on every node where {@code owner} holds it, and publishes the release.
	 * @return whether a quorum of nodes deleted it
	 * @throws LockBackendException when fewer than a quorum of nodes answered
	 */
	@Override
	public boolean release(String key, String owner) {
		checkKey(key);
		checkOwner(owner);
		this.acquisitions.releaseLate(key, owner);
		long start = System.nanoTime();
		Object[] params = releaseParams(key, owner, this.nodes.releaseChannel());
		Round round = Round.send(this.nodes.list(), (node) -> node.connection().eval(RedlockScripts.RELEASE, params),
				(r) -> r.count(RedlockScripts::isOne) >= this.quorum);
		round.awaitOrFail(start + this.nodeTimeoutNanos, "releasing '" + key + "'");
		if (round.count(RedlockScripts::isOne) >= this.quorum) {
			return true;
		}
		if (round.answered() < this.quorum) {
			throw round.unreachable("releasing '" + key + "'", this.quorum, this.settings.nodeTimeout());
		}
		return false;
	}

	/**
	 * Sets the time to live of every given lock on every node where its owner holds it, one
	 * script call per node for all locks.
	 * @return the keys renewed on a quorum of nodes within the validity of their new time to live
	 * @throws LockBackendException when fewer than a quorum of nodes answered
	 */
	@Override
	public Set<String> renew(Collection<HeldLock> locks) {
		List<HeldLock> held = List.copyOf(locks);
		if (held.isEmpty()) {
			return Set.of();
		}
		int count = held.size();
		Object[] params = new Object[1 + count * 3];
		params[0] = count;
		for (int i = 0; i < count; i++) {
			HeldLock lock = held.get(i);
			checkKey(lock.key());
			checkOwner(lock.owner());
			if (lock.ttl().toMillis() < 1) {
				throw new IllegalArgumentException("Time to live of '" + lock.key() + "' must be at least 1ms");
			}
			params[1 + i] = lock.key();
			params[1 + count + 2 * i] = lock.owner();
			params[2 + count + 2 * i] = lock.ttl().toMillis();
		}
		long start = System.nanoTime();
		Round round = Round.send(this.nodes.list(), (node) -> node.connection().eval(RedlockScripts.RENEW, params),
				(r) -> allRenewedOnQuorum(r, held.size()));
		round.awaitOrFail(start + this.nodeTimeoutNanos, "renewing " + held.size() + " locks");
		if (round.answered() < this.quorum) {
			throw round.unreachable("renewing " + held.size() + " locks", this.quorum, this.settings.nodeTimeout());
		}
		long elapsed = System.nanoTime() - start;
		int[] renewedOn = renewedCounts(round, held.size());
		Set<String> renewed = new LinkedHashSet<>();
		for (int i = 0; i < held.size(); i++) {
			HeldLock lock = held.get(i);
			if (renewedOn[i] >= this.quorum
					&& elapsed + this.settings.driftNanos(lock.ttl()) < lock.ttl().toNanos()) {
				renewed.add(lock.key());
			}
		}
		return renewed;
	}

	/**
	 * Claims the tick on a quorum of nodes, in one attempt bounded by the node timeout. Each node
	 * judges the tick by its own clock and keeps the last tick claimed at the key followed by
	 * {@code {tick}}, accepting only a later one, so two callers claiming the same tick never both
	 * reach a quorum (the quorums would share a node, which accepts the tick once). Simultaneous
	 * claims that split the nodes so that none reaches a quorum leave the tick claimed by nobody:
	 * it is skipped ({@code NO_QUORUM} for a claim that won some nodes), never run twice. The
	 * answer's time is the median of the times of the nodes that answered.
	 * @throws LockBackendException when fewer than a quorum of nodes answered
	 */
	@Override
	public TickClaim claimTick(String key, Instant tick, Duration tolerance, Duration ttl) {
		checkKey(key);
		if (ttl.toMillis() < 1) {
			throw new IllegalArgumentException("Time to live of the tick claim of '" + key + "' must be at least 1ms");
		}
		String tickKey = key + TICK_SUFFIX;
		// One id per claim, the same on every node (see claim-tick.lua); this client never sends
		// a request twice, but the record's format is the redis backend's.
		String id = Long.toUnsignedString(CLAIM_IDS.nextLong());
		long start = System.nanoTime();
		Round round = Round.send(this.nodes.list(),
				(node) -> node.connection()
					.eval(RedlockScripts.CLAIM_TICK, 1, tickKey, tick.toEpochMilli(), tolerance.toMillis(),
							ttl.toMillis(), id),
				(r) -> r.count((reply) -> RedlockScripts.claimOutcome(reply) == 1) >= this.quorum
						|| r.count((reply) -> RedlockScripts.claimOutcome(reply) != 1) + r.failed() > r.size()
								- this.quorum);
		round.awaitOrFail(start + this.nodeTimeoutNanos, "claiming a tick of '" + key + "'");
		if (round.answered() < this.quorum) {
			throw round.unreachable("claiming a tick of '" + key + "'", this.quorum, this.settings.nodeTimeout());
		}
		Instant time = Instant.ofEpochMilli(RedlockScripts.medianClaimTime(round));
		int claimed = round.count((reply) -> RedlockScripts.claimOutcome(reply) == 1);
		int notDue = round.count((reply) -> RedlockScripts.claimOutcome(reply) == 2);
		int taken = round.count((reply) -> RedlockScripts.claimOutcome(reply) == 0);
		if (claimed >= this.quorum) {
			boolean valid = System.nanoTime() - start + this.settings.driftNanos(ttl) < ttl.toNanos();
			return new TickClaim(valid ? TickClaim.Outcome.CLAIMED : TickClaim.Outcome.TAKEN, time);
		}
		if (notDue >= this.quorum || (claimed == 0 && notDue > taken)) {
			return new TickClaim(TickClaim.Outcome.NOT_DUE, time);
		}
		return new TickClaim((claimed > 0) ? TickClaim.Outcome.NO_QUORUM : TickClaim.Outcome.TAKEN, time);
	}

	/**
	 * Subscribes to releases on every node. A release of one lock is delivered once, although
	 * every node publishes it (the last 1,024 releases are remembered to drop the copies); the
	 * listener runs on a Redisson thread and must not block. Delivery is best effort: a node
	 * whose subscription fails delivers nothing, and the engine's polling covers it.
	 */
	@Override
	public AutoCloseable subscribe(Consumer<String> listener) {
		RedlockReleaseEvents events = RedlockReleaseEvents.subscribe(this.nodes.list(), this.quorum,
				this.settings.releaseChannel(), listener);
		this.subscriptions.add(events);
		return () -> {
			this.subscriptions.remove(events);
			events.close();
		};
	}

	/**
	 * Whether release deliveries have started: a subscription is open and each open one was
	 * registered by a quorum of nodes (Redisson registers them in the background).
	 */
	@Override
	public boolean isListening() {
		if (this.subscriptions.isEmpty()) {
			return false;
		}
		for (RedlockReleaseEvents events : this.subscriptions) {
			if (!events.isListening()) {
				return false;
			}
		}
		return true;
	}

	/**
	 * Pings every node in parallel, each bounded by the node timeout.
	 * @return the number of nodes that answered
	 */
	public int reachableNodes() {
		return this.nodes.reachable();
	}

	/** Whether at least a quorum of nodes answers a ping within the node timeout. */
	public boolean hasQuorum() {
		return reachableNodes() >= this.quorum;
	}

	/**
	 * Pings every node in parallel, each bounded by the node timeout: up when at least a quorum
	 * answers. Details: configured nodes, reachable nodes and the quorum.
	 */
	@Override
	public Check checkHealth() {
		int reachable = reachableNodes();
		Map<String, Object> details = new LinkedHashMap<>();
		details.put("nodes", this.nodes.size());
		details.put("reachable", reachable);
		details.put("quorum", this.quorum);
		return (reachable >= this.quorum) ? Check.up(details) : Check.down(details);
	}

	/**
	 * Checks the setup against what Redlock's safety needs: at least 3 nodes, an odd count, and
	 * nodes that persist every write before acknowledging it ({@code appendonly yes},
	 * {@code appendfsync always}). Nodes that cannot be reached or refuse {@code CONFIG GET}
	 * are reported as unchecked; nothing here fails.
	 * @return one sentence per problem found, empty when none
	 */
	public List<String> setupWarnings() {
		return this.nodes.setupWarnings();
	}

	/** Logs each of {@link #setupWarnings()} once, at WARN. */
	public void logSetupWarnings() {
		for (String warning : setupWarnings()) {
			logger.warn(warning);
		}
	}

	/** Closes the scripts' connections, and shuts down the clients if this backend created them through {@link #connect}. */
	@Override
	public void close() {
		this.nodes.close();
	}

	private boolean allRenewedOnQuorum(Round round, int lockCount) {
		for (int count : renewedCounts(round, lockCount)) {
			if (count < this.quorum) {
				return false;
			}
		}
		return true;
	}

	/** The parameters of {@link RedlockScripts#RELEASE}, encoded once for every node. */
	static Object[] releaseParams(String key, String owner, byte[] channel) {
		return new Object[] { ONE_KEY, bytes(key), bytes(owner), channel };
	}

	private static void checkKey(String key) {
		if (key.isEmpty() || key.length() > MAX_KEY_LENGTH) {
			throw new IllegalArgumentException("Lock key must have 1 to " + MAX_KEY_LENGTH + " characters");
		}
		if (key.indexOf('{') >= 0) {
			throw new IllegalArgumentException("Lock key '" + key + "' must not contain '{'");
		}
	}

	private static void checkOwner(String owner) {
		if (owner.isEmpty() || owner.indexOf(' ') >= 0) {
			throw new IllegalArgumentException("Owner token must be non-empty and contain no space");
		}
	}

	/**
	 * Checks node addresses as {@link #connect} does.
	 * @return the addresses without credentials, normalized
	 * @throws IllegalArgumentException naming the first entry that is malformed or repeated
	 */
	public static List<String> checkAddresses(List<String> addresses) {
		return RedlockNodes.checkAddresses(addresses);
	}

}
