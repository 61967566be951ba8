package dev.holdfast.redlock;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;

import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;
import org.redisson.Redisson;
import org.redisson.api.RScript;
import org.redisson.api.RScript.Mode;
import org.redisson.api.RScript.ReturnType;
import org.redisson.api.RTopic;
import org.redisson.api.RedissonClient;
import org.redisson.api.redisnode.RedisNodes;
import org.redisson.client.RedisTimeoutException;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;
import org.redisson.config.EqualJitterDelay;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.BackendHealth;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.TickClaims;

/**
 * A lock held on a majority of N independent Redis masters: the Redlock algorithm, on one
 * Redisson client per node.
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

	/** The channel on every node on which a release publishes {@code "<key> <owner>"}. */
	public static final String RELEASE_CHANNEL = "holdfast:redlock:released";

	static final String FENCE_SUFFIX = "{fence}";

	static final String TICK_SUFFIX = "{tick}";

	static final long FENCE_RETENTION_MILLIS = Duration.ofDays(1).toMillis();

	private static final int MAX_KEY_LENGTH = 1024;

	private static final int RECENT_RELEASES = 1024;

	private static final int MAX_LATE_ACQUIRES = 10_000;

	// KEYS: lock, counter. ARGV: owner, ttl ms, counter retention ms.
	// Returns {1, candidate token} when granted, {0, pttl of the holder} when held.
	private static final String ACQUIRE_SCRIPT = """
			local holder = redis.call('get', KEYS[1])
			if holder and holder ~= ARGV[1] then
				return {0, redis.call('pttl', KEYS[1])}
			end
			redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
			local now = redis.call('time')
			local floor = tonumber(now[1]) * 1000000 + math.floor(tonumber(now[2]) / 1000) * 1000
			local token = math.max((tonumber(redis.call('get', KEYS[2])) or 0) + 1, floor)
			redis.call('set', KEYS[2], string.format('%.0f', token), 'px', ARGV[3])
			return {1, token}
			""";

	// KEYS: lock, counter. ARGV: owner, token, counter retention ms. Raises the counter to the
	// token only while the owner still holds the lock on this node.
	private static final String FENCE_SCRIPT = """
			if redis.call('get', KEYS[1]) ~= ARGV[1] then
				return 0
			end
			local current = tonumber(redis.call('get', KEYS[2])) or 0
			if tonumber(ARGV[2]) > current then
				redis.call('set', KEYS[2], ARGV[2], 'px', ARGV[3])
			end
			return 1
			""";

	// KEYS: lock. ARGV: owner, channel.
	private static final String RELEASE_SCRIPT = """
			if redis.call('get', KEYS[1]) == ARGV[1] then
				redis.call('del', KEYS[1])
				redis.call('publish', ARGV[2], KEYS[1] .. ' ' .. ARGV[1])
				return 1
			end
			return 0
			""";

	// KEYS: lock 1..n. ARGV: owner 1, ttl ms 1, ..., owner n, ttl ms n.
	private static final String RENEW_SCRIPT = """
			local renewed = {}
			for i, key in ipairs(KEYS) do
				if redis.call('get', key) == ARGV[2 * i - 1] then
					redis.call('pexpire', key, ARGV[2 * i])
					renewed[i] = 1
				else
					renewed[i] = 0
				end
			end
			return renewed
			""";

	// KEYS: the job's tick record. ARGV: tick ms, ttl ms. The record only moves forward.
	private static final String CLAIM_TICK_SCRIPT = """
			local last = tonumber(redis.call('get', KEYS[1]) or '-1')
			if last ~= nil and last >= tonumber(ARGV[1]) then
				return 0
			end
			redis.call('set', KEYS[1], ARGV[1], 'px', ARGV[2])
			return 1
			""";

	private final List<Node> nodes;

	private final int quorum;

	private final RedlockSettings settings;

	private final long nodeTimeoutNanos;

	private final @Nullable Runnable onClose;

	// Acquisitions that returned before every node had answered, by "<key> <owner>", until the
	// last node answers (at most the node timeout). A release also releases on those nodes once
	// they answer: sent on another connection, it could otherwise overtake the late acquire
	// request and leave a lock behind on that node for its whole time to live.
	private final Map<String, Round> lateAcquires = new ConcurrentHashMap<>();

	/**
	 * Creates a backend over clients that the caller owns and closes.
	 * @param clients one client per node, each connected to one independent Redis master
	 * (single-server configuration); the quorum is {@code clients.size() / 2 + 1}
	 * @param settings the timing of the algorithm
	 */
	public RedlockLockBackend(List<RedissonClient> clients, RedlockSettings settings) {
		this(namesOf(clients), clients, settings, null);
	}

	private RedlockLockBackend(List<String> names, List<RedissonClient> clients, RedlockSettings settings,
			@Nullable Runnable onClose) {
		if (clients.isEmpty()) {
			throw new IllegalArgumentException("Redlock needs at least one node");
		}
		List<Node> nodes = new ArrayList<>(clients.size());
		for (int i = 0; i < clients.size(); i++) {
			RedissonClient client = clients.get(i);
			nodes.add(new Node(names.get(i), client, client.getScript(StringCodec.INSTANCE)));
		}
		this.nodes = List.copyOf(nodes);
		this.quorum = nodes.size() / 2 + 1;
		this.settings = settings;
		this.nodeTimeoutNanos = settings.nodeTimeout().toNanos();
		this.onClose = onClose;
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
		List<String> names = checkAddresses(addresses);
		int threads = Math.max(2, Math.min(4, Runtime.getRuntime().availableProcessors()));
		EventLoopGroup group = new MultiThreadIoEventLoopGroup(threads, daemonThreads("holdfast-redlock-io-"),
				NioIoHandler.newFactory());
		ExecutorService executor = Executors.newFixedThreadPool(2, daemonThreads("holdfast-redlock-"));
		List<RedissonClient> clients = new ArrayList<>();
		try {
			for (String address : addresses) {
				Config config = new Config();
				config.setEventLoopGroup(group);
				config.setExecutor(executor);
				config.setCodec(StringCodec.INSTANCE);
				config.setLazyInitialization(true);
				config.setUseScriptCache(true);
				config.setUsername(username);
				config.setPassword(password);
				config.useSingleServer()
					.setAddress(address)
					.setTimeout(toIntMillis(settings.nodeTimeout()))
					.setConnectTimeout(toIntMillis(connectTimeout))
					.setRetryAttempts(0)
					// A node that comes back rejoins within about a second, however long it was away.
					.setReconnectionDelay(new EqualJitterDelay(Duration.ofMillis(50), Duration.ofSeconds(1)))
					.setConnectionMinimumIdleSize(1)
					.setConnectionPoolSize(16)
					.setSubscriptionConnectionMinimumIdleSize(1)
					.setSubscriptionConnectionPoolSize(1)
					.setClientName("holdfast-redlock");
				clients.add(Redisson.create(config));
			}
		}
		catch (RuntimeException ex) {
			shutdown(clients, group, executor);
			throw ex;
		}
		return new RedlockLockBackend(names, clients, settings, () -> shutdown(clients, group, executor));
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
		return this.nodes.stream().map(Node::name).toList();
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
		long ttlNanos = ttl.toNanos();
		if (ttlNanos <= driftNanos || ttl.toMillis() < 1) {
			throw new IllegalArgumentException("Lease time " + ttl + " is too short for Redlock: it must exceed the "
					+ "clock drift allowance of " + Duration.ofNanos(driftNanos)
					+ " (holdfast.redlock.drift-factor and holdfast.redlock.min-drift)");
		}
		List<Object> keys = List.of(key, key + FENCE_SUFFIX);
		long start = System.nanoTime();
		Round round = Round.send(this.nodes,
				(node) -> node.script()
					.evalAsync(Mode.READ_WRITE, ACQUIRE_SCRIPT, ReturnType.LIST, keys, owner,
							Long.toString(ttl.toMillis()), Long.toString(FENCE_RETENTION_MILLIS)),
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
			throw unreachable("acquiring '" + key + "'", round);
		}
		return AcquireResult.held(Math.max(holderRemaining, 0));
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
		Round late = this.lateAcquires.remove(key + " " + owner);
		if (late != null) {
			late.whenEachCompletes((node) -> sendRelease(node, key, owner));
		}
		long start = System.nanoTime();
		Round round = Round.send(this.nodes,
				(node) -> node.script()
					.evalAsync(Mode.READ_WRITE, RELEASE_SCRIPT, ReturnType.LONG, List.of(key), owner, RELEASE_CHANNEL),
				(r) -> r.count(RedlockLockBackend::isOne) >= this.quorum);
		awaitInterruptibly(round, start + this.nodeTimeoutNanos, "releasing '" + key + "'");
		if (round.count(RedlockLockBackend::isOne) >= this.quorum) {
			return true;
		}
		if (round.answered() < this.quorum) {
			throw unreachable("releasing '" + key + "'", round);
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
		List<Object> keys = new ArrayList<>(held.size());
		Object[] args = new Object[held.size() * 2];
		for (int i = 0; i < held.size(); i++) {
			HeldLock lock = held.get(i);
			checkKey(lock.key());
			checkOwner(lock.owner());
			if (lock.ttl().toMillis() < 1) {
				throw new IllegalArgumentException("Time to live of '" + lock.key() + "' must be at least 1ms");
			}
			keys.add(lock.key());
			args[2 * i] = lock.owner();
			args[2 * i + 1] = Long.toString(lock.ttl().toMillis());
		}
		long start = System.nanoTime();
		Round round = Round.send(this.nodes,
				(node) -> node.script().evalAsync(Mode.READ_WRITE, RENEW_SCRIPT, ReturnType.LIST, keys, args),
				(r) -> allRenewedOnQuorum(r, held.size()));
		awaitInterruptibly(round, start + this.nodeTimeoutNanos, "renewing " + held.size() + " locks");
		if (round.answered() < this.quorum) {
			throw unreachable("renewing " + held.size() + " locks", round);
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
	 * Claims the tick on a quorum of nodes, in one attempt bounded by the node timeout. Every node
	 * keeps the last tick claimed at the key followed by {@code {tick}} and accepts only a later
	 * one, so two callers claiming the same tick never both reach a quorum (the quorums would
	 * share a node, which accepts the tick once). Simultaneous claims that split the nodes so that
	 * none reaches a quorum leave the tick claimed by nobody: it is skipped, never run twice.
	 * @return whether a quorum accepted the claim while its record still lives
	 * @throws LockBackendException when fewer than a quorum of nodes answered
	 */
	@Override
	public boolean claimTick(String key, Instant tick, Duration ttl) {
		checkKey(key);
		if (ttl.toMillis() < 1) {
			throw new IllegalArgumentException("Time to live of the tick claim of '" + key + "' must be at least 1ms");
		}
		List<Object> keys = List.of(key + TICK_SUFFIX);
		long start = System.nanoTime();
		Round round = Round.send(this.nodes,
				(node) -> node.script()
					.evalAsync(Mode.READ_WRITE, CLAIM_TICK_SCRIPT, ReturnType.LONG, keys,
							Long.toString(tick.toEpochMilli()), Long.toString(ttl.toMillis())),
				(r) -> r.count(RedlockLockBackend::isOne) >= this.quorum
						|| r.count((reply) -> !isOne(reply)) + r.failed() > r.size() - this.quorum);
		awaitInterruptibly(round, start + this.nodeTimeoutNanos, "claiming a tick of '" + key + "'");
		if (round.count(RedlockLockBackend::isOne) >= this.quorum) {
			return System.nanoTime() - start + this.settings.driftNanos(ttl) < ttl.toNanos();
		}
		if (round.answered() < this.quorum) {
			throw unreachable("claiming a tick of '" + key + "'", round);
		}
		return false;
	}

	/**
	 * Subscribes to releases on every node. A release of one lock is delivered once, although
	 * every node publishes it (the last 1,024 releases are remembered to drop the copies); the
	 * listener runs on a Redisson thread and must not block. Delivery is best effort: a node
	 * whose subscription fails delivers nothing, and the engine's polling covers it.
	 */
	@Override
	public AutoCloseable subscribe(Consumer<String> listener) {
		Set<String> recent = Collections.newSetFromMap(new LinkedHashMap<>(64, 0.75f, false) {
			@Override
			protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
				return size() > RECENT_RELEASES;
			}
		});
		List<RTopic> topics = new ArrayList<>();
		List<CompletionStage<Integer>> registrations = new ArrayList<>();
		for (Node node : this.nodes) {
			RTopic topic = node.client().getTopic(RELEASE_CHANNEL, StringCodec.INSTANCE);
			topics.add(topic);
			registrations.add(topic.addListenerAsync(String.class, (channel, message) -> {
				boolean first;
				synchronized (recent) {
					first = recent.add(message);
				}
				int space = message.indexOf(' ');
				if (first && space > 0) {
					listener.accept(message.substring(0, space));
				}
			}));
		}
		return () -> {
			for (int i = 0; i < topics.size(); i++) {
				RTopic topic = topics.get(i);
				registrations.get(i).thenAccept((id) -> topic.removeListenerAsync(id));
			}
		};
	}

	/**
	 * Pings every node in parallel, each bounded by the node timeout.
	 * @return the number of nodes that answered
	 */
	public int reachableNodes() {
		long start = System.nanoTime();
		long timeoutMillis = this.settings.nodeTimeout().toMillis();
		Round round = Round.send(this.nodes, (node) -> node.client()
			.getRedisNodes(RedisNodes.SINGLE)
			.getInstance()
			.pingAsync(timeoutMillis, TimeUnit.MILLISECONDS), (r) -> false);
		awaitInterruptibly(round, start + this.nodeTimeoutNanos, "pinging the nodes");
		return round.count(Boolean.TRUE::equals);
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
		List<String> warnings = new ArrayList<>();
		if (this.nodes.size() < 3) {
			warnings.add("Redlock is configured with " + this.nodes.size()
					+ " node(s): with fewer than 3 the lock does not survive the loss of any node; configure at least 3 "
					+ "independent masters in holdfast.redlock.nodes");
		}
		else if (this.nodes.size() % 2 == 0) {
			warnings.add("Redlock is configured with an even number of nodes (" + this.nodes.size()
					+ "): the quorum is " + this.quorum + ", so the last node adds no fault tolerance; use an odd count");
		}
		Object[] configs = new Object[this.nodes.size()];
		// Two tries: the first request to a node also opens its connection.
		for (int attempt = 0; attempt < 2; attempt++) {
			List<Integer> unanswered = new ArrayList<>();
			for (int i = 0; i < configs.length; i++) {
				if (!(configs[i] instanceof Map)) {
					unanswered.add(i);
				}
			}
			if (unanswered.isEmpty()) {
				break;
			}
			long start = System.nanoTime();
			Round round = Round.send(unanswered.stream().map(this.nodes::get).toList(),
					(node) -> node.client().getRedisNodes(RedisNodes.SINGLE).getInstance().getConfigAsync("append*"),
					(r) -> false);
			awaitInterruptibly(round, start + this.nodeTimeoutNanos + TimeUnit.SECONDS.toNanos(1),
					"checking the nodes' persistence");
			for (int i = 0; i < unanswered.size(); i++) {
				configs[unanswered.get(i)] = round.result(i);
			}
		}
		List<String> volatileNodes = new ArrayList<>();
		for (int i = 0; i < this.nodes.size(); i++) {
			String name = this.nodes.get(i).name();
			Object result = configs[i];
			if (result instanceof Map<?, ?> config) {
				boolean appendOnly = "yes".equalsIgnoreCase(String.valueOf(config.get("appendonly")));
				boolean fsyncAlways = "always".equalsIgnoreCase(String.valueOf(config.get("appendfsync")));
				if (!appendOnly || !fsyncAlways) {
					volatileNodes.add(name + " (appendonly " + config.get("appendonly") + ", appendfsync "
							+ config.get("appendfsync") + ")");
				}
			}
			else {
				warnings.add("Redlock node " + name + " could not be checked for persistence: "
						+ describe(result) + "; make sure it runs with appendonly yes and appendfsync always");
			}
		}
		if (!volatileNodes.isEmpty()) {
			warnings.add("Redlock nodes do not persist every write before acknowledging it: "
					+ String.join(", ", volatileNodes) + ". A node that restarts forgets the locks it held, "
					+ "and another client can then build a quorum with it; run the nodes with appendonly yes and "
					+ "appendfsync always, or keep a crashed node down for longer than the longest lease time");
		}
		return warnings;
	}

	/** Logs each of {@link #setupWarnings()} once, at WARN. */
	public void logSetupWarnings() {
		for (String warning : setupWarnings()) {
			logger.warn(warning);
		}
	}

	/** Shuts down the clients if this backend created them through {@link #connect}. */
	@Override
	public void close() {
		if (this.onClose != null) {
			this.onClose.run();
		}
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
		List<Object> keys = List.of(key, key + FENCE_SUFFIX);
		String tokenText = Long.toString(token);
		Round round = Round.send(granted,
				(node) -> node.script()
					.evalAsync(Mode.READ_WRITE, FENCE_SCRIPT, ReturnType.LONG, keys, owner, tokenText,
							Long.toString(FENCE_RETENTION_MILLIS)),
				(r) -> r.count(RedlockLockBackend::isOne) >= this.quorum
						|| r.count((reply) -> !isOne(reply)) + r.failed() > granted.size() - this.quorum);
		long deadline = Math.min(System.nanoTime() + this.nodeTimeoutNanos, validUntil);
		return awaitOrAbandon(round, acquire, deadline, key, owner)
				&& round.count(RedlockLockBackend::isOne) >= this.quorum;
	}

	// Waits for a round of an acquisition. When the caller is interrupted, takes back whatever the
	// acquisition's requests take, without waiting for it, sets the interrupt flag again and
	// returns false: the attempt then reports the lock as not acquired, and the engine ends the
	// wait with its own interruption handling.
	private boolean awaitOrAbandon(Round round, Round acquire, long deadline, String key, String owner) {
		try {
			round.await(deadline);
			return true;
		}
		catch (InterruptedException ex) {
			for (Node node : this.nodes) {
				sendRelease(node, key, owner);
			}
			acquire.whenEachCompletes((node) -> sendRelease(node, key, owner));
			Thread.currentThread().interrupt();
			return false;
		}
	}

	private void awaitInterruptibly(Round round, long deadline, String action) {
		try {
			round.await(deadline);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockBackendException("Interrupted while " + action, ex);
		}
	}

	// Releases on every node that may hold the key for this owner, and waits (bounded) for the
	// answers, so that a failed attempt leaves nothing behind that would block the next one.
	private void releaseAfterFailedAttempt(Round acquire, String key, String owner) {
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
		Round release = Round.send(targets, (node) -> node.script()
			.evalAsync(Mode.READ_WRITE, RELEASE_SCRIPT, ReturnType.LONG, List.of(key), owner, RELEASE_CHANNEL),
				(r) -> false);
		awaitOrAbandon(release, acquire, start + this.nodeTimeoutNanos, key, owner);
	}

	private void trackLateNodes(Round round, String key, String owner) {
		if (round.pending() == 0) {
			return;
		}
		String id = key + " " + owner;
		if (this.lateAcquires.size() < MAX_LATE_ACQUIRES) {
			this.lateAcquires.put(id, round);
			round.whenAllComplete(() -> this.lateAcquires.remove(id, round));
		}
	}

	private void sendRelease(Node node, String key, String owner) {
		try {
			node.script()
				.evalAsync(Mode.READ_WRITE, RELEASE_SCRIPT, ReturnType.LONG, List.of(key), owner, RELEASE_CHANNEL);
		}
		catch (RuntimeException ex) {
			logger.debug("Could not send release of '" + key + "' to " + node.name(), ex);
		}
	}

	// The outcome of an acquire round is known once it is acquired (a quorum granted), certainly
	// unreachable (too many failures for a quorum to answer) or certainly held (a quorum answered,
	// and the nodes still pending cannot make up a quorum of grants).
	private boolean acquireDecided(Round round) {
		int granted = round.count(RedlockLockBackend::isGranted);
		int replied = round.answered();
		int failed = round.failed();
		int pending = round.size() - replied - failed;
		return granted >= this.quorum || failed > this.nodes.size() - this.quorum
				|| (replied >= this.quorum && granted + pending < this.quorum);
	}

	private boolean allRenewedOnQuorum(Round round, int lockCount) {
		for (int count : renewedCounts(round, lockCount)) {
			if (count < this.quorum) {
				return false;
			}
		}
		return true;
	}

	private static int[] renewedCounts(Round round, int lockCount) {
		int[] counts = new int[lockCount];
		for (int n = 0; n < round.size(); n++) {
			if (round.result(n) instanceof List<?> reply) {
				for (int i = 0; i < lockCount && i < reply.size(); i++) {
					if (reply.get(i) instanceof Number number && number.longValue() == 1) {
						counts[i]++;
					}
				}
			}
		}
		return counts;
	}

	// Says how many nodes answered, failed, and timed out (no answer by the deadline, or the
	// client's own timeout), against the quorum, as the caller saw them when it stopped waiting:
	// answers that came later are not counted. Nodes still pending when the outcome was already
	// certain were not waited for.
	private LockBackendException unreachable(String action, Round round) {
		int failed = 0;
		int timedOut = 0;
		int notAwaited = 0;
		StringBuilder details = new StringBuilder();
		Throwable cause = null;
		for (int i = 0; i < round.size(); i++) {
			Object result = round.result(i);
			String detail;
			if (result instanceof Failure failure && !isTimeout(failure.cause())) {
				failed++;
				detail = describe(result);
				cause = (cause != null) ? cause : failure.cause();
			}
			else if (result instanceof Failure || (result == null && round.timedOut())) {
				timedOut++;
				detail = "timed out";
			}
			else if (result == null) {
				notAwaited++;
				detail = "not awaited";
			}
			else {
				continue;
			}
			details.append("; ").append(round.node(i).name()).append(": ").append(detail);
		}
		StringBuilder message = new StringBuilder("Redlock quorum not reached while ").append(action)
			.append(": ")
			.append(round.answered())
			.append(" of ")
			.append(round.size())
			.append(" nodes answered, ")
			.append(this.quorum)
			.append(" needed; ")
			.append(failed)
			.append(" failed, ")
			.append(timedOut)
			.append(" timed out (node timeout ")
			.append(this.settings.nodeTimeout().toMillis())
			.append(" ms)");
		if (notAwaited > 0) {
			message.append(", ").append(notAwaited).append(" not awaited (the quorum was out of reach)");
		}
		return new LockBackendException(message.append(details).toString(), cause);
	}

	private static boolean isTimeout(Throwable failure) {
		return failure instanceof RedisTimeoutException || failure instanceof TimeoutException;
	}

	private static String describe(@Nullable Object result) {
		if (result == null) {
			return "no answer in time";
		}
		if (result instanceof Failure failure) {
			return failure.cause().getClass().getSimpleName() + ": " + failure.cause().getMessage();
		}
		return "unexpected answer " + result;
	}

	private static boolean isGranted(Object reply) {
		return reply instanceof List<?> list && list.size() == 2 && list.get(0) instanceof Number flag
				&& flag.longValue() == 1;
	}

	private static long tokenOf(Object reply) {
		return ((Number) ((List<?>) reply).get(1)).longValue();
	}

	private static boolean isOne(Object reply) {
		return reply instanceof Number number && number.longValue() == 1;
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
		if (addresses.isEmpty()) {
			throw new IllegalArgumentException("No Redlock node configured");
		}
		List<String> names = new ArrayList<>();
		Set<String> seen = new HashSet<>();
		for (int i = 0; i < addresses.size(); i++) {
			String address = addresses.get(i);
			URI uri;
			try {
				uri = new URI(address.trim());
			}
			catch (URISyntaxException ex) {
				throw new IllegalArgumentException("Redlock node [" + i + "] '" + address
						+ "' is not a URI; write it as redis://host:port or rediss://host:port");
			}
			String scheme = (uri.getScheme() != null) ? uri.getScheme().toLowerCase(Locale.ROOT) : "";
			if (!scheme.equals("redis") && !scheme.equals("rediss") || uri.getHost() == null) {
				throw new IllegalArgumentException("Redlock node [" + i + "] '" + address
						+ "' must be written as redis://host:port or rediss://host:port");
			}
			int port = (uri.getPort() != -1) ? uri.getPort() : 6379;
			String name = scheme + "://" + uri.getHost().toLowerCase(Locale.ROOT) + ":" + port;
			if (!seen.add(uri.getHost().toLowerCase(Locale.ROOT) + ":" + port)) {
				throw new IllegalArgumentException("Redlock node [" + i + "] " + name
						+ " is listed twice; every node must be a different, independent master");
			}
			names.add(name);
		}
		return names;
	}

	private static List<String> namesOf(List<RedissonClient> clients) {
		List<String> names = new ArrayList<>();
		for (int i = 0; i < clients.size(); i++) {
			names.add("node-" + i);
		}
		return names;
	}

	private static int toIntMillis(Duration duration) {
		return (int) Math.min(Integer.MAX_VALUE, Math.max(1, duration.toMillis()));
	}

	private static ThreadFactory daemonThreads(String prefix) {
		AtomicInteger count = new AtomicInteger();
		return (runnable) -> {
			Thread thread = new Thread(runnable, prefix + count.incrementAndGet());
			thread.setDaemon(true);
			return thread;
		};
	}

	private static void shutdown(List<RedissonClient> clients, EventLoopGroup group, ExecutorService executor) {
		for (RedissonClient client : clients) {
			try {
				client.shutdown(0, 2, TimeUnit.SECONDS);
			}
			catch (RuntimeException ex) {
				logger.debug("Could not shut down a Redlock client", ex);
			}
		}
		group.shutdownGracefully(0, 2, TimeUnit.SECONDS);
		executor.shutdown();
	}

	private record Node(String name, RedissonClient client, RScript script) {
	}

	private record Failure(Throwable cause) {
	}

	/**
	 * One request sent to several nodes at once. The answers are recorded as they arrive (on
	 * Redisson's threads); the caller waits until the decision predicate holds, every node has
	 * answered, or the deadline passes, whichever comes first.
	 */
	private static final class Round {

		private final List<Node> nodes;

		private final AtomicReferenceArray<@Nullable Object> results;

		private final List<CompletableFuture<?>> calls;

		private final AtomicInteger answered = new AtomicInteger();

		private final CompletableFuture<Void> decided = new CompletableFuture<>();

		private final Predicate<Round> decision;

		// The answers as they stood when the caller stopped waiting; later answers do not change
		// the caller's view, so that its decision and its error message agree.
		private volatile @Nullable Object @Nullable [] frozen;

		// Whether the caller stopped waiting at the deadline, before the round was decided.
		private volatile boolean timedOut;

		private Round(List<Node> nodes, Predicate<Round> decision) {
			this.nodes = nodes;
			this.results = new AtomicReferenceArray<>(nodes.size());
			this.calls = new ArrayList<>(nodes.size());
			this.decision = decision;
		}

		static Round send(List<Node> nodes, Function<Node, CompletionStage<?>> call, Predicate<Round> decision) {
			Round round = new Round(nodes, decision);
			if (nodes.isEmpty()) {
				round.decided.complete(null);
			}
			for (int i = 0; i < nodes.size(); i++) {
				int index = i;
				CompletableFuture<?> future;
				try {
					future = call.apply(nodes.get(i)).toCompletableFuture();
				}
				catch (RuntimeException ex) {
					future = CompletableFuture.failedFuture(ex);
				}
				round.calls.add(future);
				future.whenComplete((value, error) -> round.record(index, value, error));
			}
			return round;
		}

		private void record(int index, @Nullable Object value, @Nullable Throwable error) {
			Object result = (error != null) ? new Failure(unwrap(error))
					: (value != null) ? value : new Failure(new IllegalStateException("empty reply"));
			this.results.set(index, result);
			if (this.answered.incrementAndGet() == this.nodes.size() || this.decision.test(this)) {
				this.decided.complete(null);
			}
		}

		/**
		 * Waits for the decision or the deadline, then freezes the caller's view of the answers:
		 * the nodes that have not answered by then count as failed, timed out when the deadline
		 * passed first.
		 */
		void await(long deadline) throws InterruptedException {
			try {
				long remaining = deadline - System.nanoTime();
				if (!this.decided.isDone()) {
					if (remaining > 0) {
						this.decided.get(remaining, TimeUnit.NANOSECONDS);
					}
					else {
						this.timedOut = true;
					}
				}
			}
			catch (TimeoutException ex) {
				this.timedOut = true;
			}
			catch (ExecutionException ex) {
				// Never completed exceptionally.
			}
			finally {
				Object[] snapshot = new Object[this.results.length()];
				for (int i = 0; i < snapshot.length; i++) {
					snapshot[i] = this.results.get(i);
				}
				this.frozen = snapshot;
			}
		}

		int size() {
			return this.nodes.size();
		}

		/** Whether the caller stopped waiting at the deadline, before the round was decided. */
		boolean timedOut() {
			return this.timedOut;
		}

		Node node(int index) {
			return this.nodes.get(index);
		}

		/** The answer of a node: its reply, a {@link Failure}, or {@code null} while pending. */
		@Nullable Object result(int index) {
			Object[] snapshot = this.frozen;
			return (snapshot != null) ? snapshot[index] : this.results.get(index);
		}

		/** The number of nodes that replied, failures and pending requests not counted. */
		int answered() {
			return count((reply) -> true);
		}

		/** The number of nodes whose request failed. */
		int failed() {
			int count = 0;
			for (int i = 0; i < this.results.length(); i++) {
				if (result(i) instanceof Failure) {
					count++;
				}
			}
			return count;
		}

		int count(Predicate<Object> replyMatches) {
			int count = 0;
			for (int i = 0; i < this.results.length(); i++) {
				Object result = result(i);
				if (result != null && !(result instanceof Failure) && replyMatches.test(result)) {
					count++;
				}
			}
			return count;
		}

		void whenCompletes(int index, Consumer<Node> action) {
			Node node = this.nodes.get(index);
			this.calls.get(index).whenComplete((value, error) -> action.accept(node));
		}

		/** The number of nodes that have not answered yet. */
		int pending() {
			int count = 0;
			for (int i = 0; i < this.results.length(); i++) {
				if (result(i) == null) {
					count++;
				}
			}
			return count;
		}

		void whenAllComplete(Runnable action) {
			CompletableFuture.allOf(this.calls.toArray(CompletableFuture[]::new)).whenComplete((value, error) -> action.run());
		}

		void whenEachCompletes(Consumer<Node> action) {
			for (int i = 0; i < this.nodes.size(); i++) {
				if (this.results.get(i) == null) {
					whenCompletes(i, action);
				}
			}
		}

		private static Throwable unwrap(Throwable error) {
			Throwable current = error;
			while ((current instanceof CompletionException
					|| current instanceof ExecutionException) && current.getCause() != null) {
				current = current.getCause();
			}
			return current;
		}

	}

}
