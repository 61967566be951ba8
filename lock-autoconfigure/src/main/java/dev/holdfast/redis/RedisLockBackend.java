package dev.holdfast.redis;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

import org.springframework.core.NestedExceptionUtils;
import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.script.RedisScript;
import org.springframework.util.Assert;
import org.springframework.util.ClassUtils;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.BackendHealth;
import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.KeySetAcquisition;
import dev.holdfast.spi.KeySetAcquisition.FirstTaken;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.SharedLocks;
import dev.holdfast.spi.TickClaims;
import dev.holdfast.spi.WaiterHandoff;

import static dev.holdfast.redis.LockScriptCalls.acquireKeys;
import static dev.holdfast.redis.LockScriptCalls.acquireResult;
import static dev.holdfast.redis.LockScriptCalls.releaseKeys;
import static dev.holdfast.redis.LockScriptCalls.released;
import static dev.holdfast.redis.RedisCalls.evalSha;
import static dev.holdfast.redis.RedisCalls.failure;

/**
 * Locks on one Redis (standalone, Sentinel or Cluster), through a spring-data-redis
 * {@link RedisConnectionFactory}.
 * <ul>
 * <li><b>Not reentrant.</b> Every acquisition needs a lock that no live owner holds; reentrancy
 * per thread is the engine's job.</li>
 * <li><b>Redis decides expiry.</b> A lock is the key {@code {<key>}} set with {@code SET NX PX};
 * Redis's own clock expires it. The application's clock is never consulted.</li>
 * <li><b>One round trip per operation.</b> Acquire, release and renewal are Lua scripts, sent
 * once and then run by SHA ({@code EVALSHA}, falling back to {@code EVAL} when Redis answers
 * {@code NOSCRIPT}, e.g. after a restart); renewal of any number of locks: see {@link #renew}.</li>
 * <li><b>Waiting and fair handoff.</b> A waiting acquisition records its owner in the sorted set {@code
 * {<key>}:waiters} with each refused attempt, scored with Redis's time after which the record is stale (two poll
 * intervals of the engine). The release of a lock with live records does not free it: it reserves it for one of them,
 * drawn at random, for {@value #RESERVATION_WINDOW_MILLIS} ms (the lock's value becomes {@code *<owner>}), and
 * publishes {@code {<key>}<owner>} on one channel ({@value #DEFAULT_CHANNEL} by default). The drawn waiter claims the
 * lock with its own next acquisition, which takes the fencing token; nobody else can take a reserved lock, and a
 * reservation nobody claims expires after its window. A release with no live record deletes the lock and publishes
 * nothing, except a permit slot's release (SEM-8), so pub/sub traffic grows with contention and permit releases, not
 * with the number of lock releases. {@link #subscribe} listens to
 * that channel through one subscription per backend instance, opened on first use and closed by {@link #close()};
 * messages are handed to listeners on the client's I/O thread. Pub/sub delivery is best effort: a waiter that misses
 * its reservation claims it with its next poll, which the reserved lock's remaining time bounds.</li>
 * <li><b>Fencing tokens.</b> Each successful acquisition sets the counter {@code {<key>}:fence} to {@code max(counter +
 * 1, Redis TIME in microseconds)} in the same script and returns it: scripts run one at a time, so a later holder's
 * token is larger while the counter lives, and when it is gone (a restart without persistence, its 24-hour expiry)
 * Redis's clock is above every earlier token unless it stepped back (docs/decisions/0018). Tokens stay below
 * 2<sup>53</sup> (Lua numbers are doubles); an acquisition that would pass it fails.</li>
 * <li><b>Several keys</b>: all or none in one script where one script can ({@link RedisKeySets}). <b>Read
 * holds</b>: {@link RedisSharedLocks}.</li>
 * <li><b>Redis Cluster.</b> Lock key and counter share the hash tag {@code {<key>}}, so both
 * live in one slot. Keys must therefore not contain braces.</li>
 * <li><b>Failures.</b> Every Redis error or timeout becomes a {@link LockBackendException} naming the operation and the
 * key. How long a call can take when Redis does not answer is the connection factory's command timeout ({@code
 * spring.data.redis.timeout}).</li>
 * <li><b>Non-blocking.</b> The backend made by {@link #of} on a standalone or Sentinel {@code LettuceConnectionFactory}
 * that shares its native connection (the default) is also an {@link AsyncLockBackend}: acquire and release send the
 * same scripts on that shared Lettuce connection and complete on its I/O thread, or fail with {@link
 * LockBackendException} after the command timeout. Reactive callers then never block a thread. Its blocking acquire and
 * release use that connection directly too, without spring-data-redis's per-call objects.</li>
 * </ul>
 * A failover to a replica that had not received the latest writes can lose a lock or a counter; Redis replication
 * is asynchronous. With {@link ReplicaAcks} (standalone and Sentinel), an acquisition counts only once that many
 * replicas have it, and runs on a connection of its own (see there); else use the Redlock backend.
 */
public class RedisLockBackend
		implements LockBackend, LeaseRenewal, ReleaseEvents, WaiterHandoff, BackendHealth, TickClaims, ClusterLocks,
		KeySetAcquisition, SharedLocks, AutoCloseable {

	/** The channel on which releases are published unless another one is configured. */
	public static final String DEFAULT_CHANNEL = "holdfast:released";

	/** How long a fencing counter lives after the last acquisition of its lock. */
	static final long FENCE_TTL_MILLIS = 24 * 60 * 60 * 1000L;

	/** Tokens stay below 2^53: Lua numbers are doubles. */
	static final long MAX_TOKEN = 1L << 53;

	/** Prefix of a lock's value while it is reserved for a waiter. Owners never start with it. */
	static final char RESERVED = '*';

	/** How long a release reserves a lock for the waiter it drew. */
	static final long RESERVATION_WINDOW_MILLIS = 1000;

	private static final boolean LETTUCE_PRESENT = ClassUtils.isPresent("io.lettuce.core.RedisClient",
			RedisLockBackend.class.getClassLoader());

	private final RedisConnectionFactory connectionFactory;

	private final String channel;

	final LockScriptCalls calls;

	private final RedisReleaseSubscription subscription;

	private final ReplicaAcks acks;

	final RedisRenewal renewal;

	private final RedisTickClaims tickClaims;

	private final RedisClusterLocks clusterLocks;

	private final RedisKeySets keySets;

	private final RedisSharedLocks sharedLocks;

	/** Where acquisitions and their WAIT run when replicas must acknowledge them on Lettuce. */
	final @Nullable AcknowledgedAcquisitions acknowledged;

	/** Creates a backend that publishes releases on {@value #DEFAULT_CHANNEL}. */
	public RedisLockBackend(RedisConnectionFactory connectionFactory) {
		this(connectionFactory, DEFAULT_CHANNEL);
	}

	/**
	 * Creates a backend.
	 * @param connectionFactory the application's connection factory; its command timeout bounds every call
	 * @param channel the pub/sub channel on which releases are published; every process that
	 * shares the locks must use the same one
	 */
	public RedisLockBackend(RedisConnectionFactory connectionFactory, String channel) {
		this(connectionFactory, channel, ReplicaAcks.NONE);
	}

	/**
	 * Creates a backend whose acquisitions count only once {@code acks} says enough replicas
	 * acknowledged them.
	 * @param connectionFactory the application's connection factory (standalone or Sentinel when
	 * replicas must acknowledge); its command timeout bounds every call
	 * @param channel the pub/sub channel on which releases are published; every process that
	 * shares the locks must use the same one
	 * @param acks how many replicas must acknowledge an acquisition, and how long to wait for them
	 */
	public RedisLockBackend(RedisConnectionFactory connectionFactory, String channel, ReplicaAcks acks) {
		Assert.notNull(connectionFactory, "'connectionFactory' must not be null");
		Assert.hasText(channel, "'channel' must not be empty");
		Assert.notNull(acks, "'acks' must not be null");
		this.connectionFactory = connectionFactory;
		this.channel = channel;
		this.calls = new LockScriptCalls(channel);
		this.subscription = new RedisReleaseSubscription(connectionFactory, channel);
		this.renewal = new RedisRenewal(connectionFactory);
		this.tickClaims = new RedisTickClaims(connectionFactory);
		this.clusterLocks = new RedisClusterLocks(connectionFactory);
		this.acks = acks;
		this.keySets = new RedisKeySets(connectionFactory, acks);
		this.sharedLocks = new RedisSharedLocks(this, connectionFactory);
		this.acknowledged = (acks.replicas() > 0 && LETTUCE_PRESENT)
				? AcknowledgedAcquisitions.of(connectionFactory, acks) : null;
	}

	/**
	 * Creates the backend for {@code connectionFactory}: one that also acquires and releases
	 * without blocking ({@link AsyncLockBackend}) when the factory is a standalone or Sentinel
	 * {@code LettuceConnectionFactory} that shares its native connection (the default), and a
	 * blocking one otherwise (Jedis, Redis Cluster, no shared connection), whose callers on
	 * Reactor threads then block on a blocking-friendly scheduler instead.
	 * @param connectionFactory the application's connection factory; its command timeout bounds
	 * every call, blocking or not
	 * @param channel the pub/sub channel on which releases are published
	 */
	public static RedisLockBackend of(RedisConnectionFactory connectionFactory, String channel) {
		return of(connectionFactory, channel, ReplicaAcks.NONE);
	}

	/**
	 * {@link #of(RedisConnectionFactory, String)} whose acquisitions count only once {@code acks}
	 * says enough replicas acknowledged them (see {@link ReplicaAcks}).
	 * @param connectionFactory the application's connection factory
	 * @param channel the pub/sub channel on which releases are published
	 * @param acks how many replicas must acknowledge an acquisition, and how long to wait for them
	 */
	public static RedisLockBackend of(RedisConnectionFactory connectionFactory, String channel, ReplicaAcks acks) {
		LettuceScripts scripts = LETTUCE_PRESENT ? LettuceScripts.of(connectionFactory, RedisCalls::isNoScript)
				: null;
		return (scripts != null) ? new NonBlockingRedisLockBackend(connectionFactory, channel, acks, scripts)
				: new RedisLockBackend(connectionFactory, channel, acks);
	}

	/** How many replicas must acknowledge an acquisition, and how long to wait for them. */
	public ReplicaAcks replicaAcks() {
		return this.acks;
	}

	@Override
	public String name() {
		return "redis";
	}

	/** The channel on which releases are published. */
	public String channel() {
		return this.channel;
	}

	/**
	 * Takes the lock with one script call if no owner holds it, and returns a fencing token
	 * larger than every earlier holder's (see the type's documentation for the assumptions).
	 * When held, returns the holder's remaining time to live in milliseconds, or {@code -1} for
	 * a key without expiry.
	 * @throws IllegalArgumentException if the key is empty or contains a brace, the owner is empty
	 * or starts with {@code *}, or the ttl is below one millisecond
	 * @throws LockBackendException if Redis cannot be reached or answers with an error
	 */
	@Override
	public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
		return acquire(key, owner, ttl, null);
	}

	/**
	 * {@link #tryAcquire}, also taking the lock when a release reserved it for {@code owner}; when
	 * refused, records {@code owner} as a waiter of the key for {@code recordFor} by Redis's clock
	 * (see {@link WaiterHandoff}).
	 * @throws IllegalArgumentException as {@link #tryAcquire}, or if {@code recordFor} is below 1 ms
	 * @throws LockBackendException if Redis cannot be reached or answers with an error
	 */
	@Override
	public AcquireResult tryAcquireWaiting(String key, String owner, Duration ttl, Duration recordFor) {
		return acquire(key, owner, ttl, recordFor);
	}

	private AcquireResult acquire(String key, String owner, Duration ttl, @Nullable Duration recordFor) {
		return acquire(RedisScripts.ACQUIRE, key, owner, acquireKeys(key),
				this.calls.acquireArguments(owner, ttl, recordFor));
	}

	/**
	 * Runs an acquire script ({@code ACQUIRE}, {@code ACQUIRE_SHARED}), with replicas awaited (RED-6). A shortfall
	 * of {@code ACQUIRE_SHARED} releases nothing: the entry may be a hold from before the attempt (a join), which
	 * its caller releases (RWL-28).
	 */
	AcquireResult acquire(RedisScript<Long> script, String key, String owner, byte[][] keys, byte[][] args) {
		if (this.acks.replicas() > 0) {
			boolean release = script != RedisScripts.ACQUIRE_SHARED;
			return (this.acknowledged != null)
					? AcknowledgedAcquisitions.await(key, this.acknowledged.acquire(script, key, keys, args,
							release ? releaseKeys(key) : null, release ? this.calls.releaseArguments(owner, null) : null))
					: BlockingAcknowledgedAcquisition.acquire(this, this.connectionFactory, this.acks, script, key,
							owner, keys, args);
		}
		Object reply;
		try {
			reply = eval(script, ReturnType.INTEGER, keys, args);
		}
		catch (RuntimeException ex) {
			throw failure("acquire", key, ex);
		}
		return acquireResult(key, reply);
	}

	/** Runs a script and waits for its reply, through a connection of the factory. */
	<T> T eval(RedisScript<?> script, ReturnType type, byte[][] keys, byte[][] args) {
		try (RedisConnection connection = this.connectionFactory.getConnection()) {
			return evalSha(connection, script, type, keys, args);
		}
	}

	/**
	 * Deletes the lock with one script call if {@code owner} holds it, or, if waiters are
	 * recorded, reserves it for one of them and publishes the reservation.
	 * @throws IllegalArgumentException if the key or owner is not one that {@link #tryAcquire} accepts
	 * @throws LockBackendException if Redis cannot be reached or answers with an error
	 */
	@Override
	public boolean release(String key, String owner) {
		return release(key, owner, null);
	}

	/** {@link #release(String, String)} that first records {@code nextLocal} (see {@link WaiterHandoff}). */
	@Override
	public boolean release(String key, String owner, @Nullable String nextLocal) {
		return answer("release", key, RedisScripts.RELEASE, this.calls.releaseArguments(owner, nextLocal));
	}

	/**
	 * Removes {@code owner}'s waiter record and, if the lock is reserved for it, reserves it for
	 * the next recorded waiter or frees it: only for an owner whose acquisition ended without the
	 * lock (see {@link WaiterHandoff#withdraw}).
	 */
	@Override
	public boolean withdraw(String key, String owner) {
		return answer("withdraw", key, RedisScripts.WITHDRAW, this.calls.releaseArguments(owner, null));
	}

	private boolean answer(String operation, String key, RedisScript<Long> script, byte[][] args) {
		Object reply;
		try {
			reply = eval(script, ReturnType.INTEGER, releaseKeys(key), args);
		}
		catch (RuntimeException ex) {
			throw failure(operation, key, ex);
		}
		return released(reply);
	}

	/**
	 * Sets each lock's time to live where its owner still holds it: one script call on a standalone or Sentinel Redis
	 * (per 10,000 keys, so that one script never blocks Redis long), one script call per hash slot on Redis Cluster,
	 * pipelined where the connection can (Lettuce: the calls to one node travel together and the nodes answer in
	 * parallel), else one slot after the other (Jedis, whose cluster connections cannot pipeline).
	 * @throws LockBackendException if Redis cannot be reached or answers with an error; which
	 * locks were renewed is unknown then
	 */
	@Override
	public Set<String> renew(Collection<HeldLock> locks) {
		return this.renewal.renew(locks);
	}

	/** A read hold in one script call ({@link RedisSharedLocks}); replicas awaited as for {@link #tryAcquire}. */
	@Override
	public AcquireResult tryAcquireShared(String key, String owner, Duration ttl, Duration recordFor) {
		return this.sharedLocks.tryAcquireShared(key, owner, ttl, recordFor);
	}

	/** {@link #renew} for read holds: one script call per hash slot ({@link RedisSharedLocks}). */
	@Override
	public Set<String> renewShared(Collection<HeldLock> holds) {
		return this.sharedLocks.renewShared(holds);
	}

	@Override
	public boolean acquiresKeySets() {
		return this.keySets.offered();
	}

	@Override
	public long @Nullable [] tryAcquireAll(List<HeldLock> locks) {
		return this.keySets.tryAcquireAll(this, locks);
	}

	@Override
	public @Nullable FirstTaken tryAcquireFirst(List<HeldLock> locks) {
		return this.keySets.tryAcquireFirst(this, locks);
	}

	/**
	 * Claims a tick with one script call on the key {@code {<key>}:tick}, which holds the last
	 * claimed tick in milliseconds and expires {@code ttl} after the last successful claim: a
	 * scheduled job keeps one such key however often it ticks, and no fencing counter. The
	 * script judges the tick by Redis {@code TIME}, the clock of every instance's claims.
	 * The record also carries a random id of the claim ({@code <tick> <id>}): a claim that Redis
	 * ran but whose answer was lost, and that
	 * Lettuce sends again after reconnecting, finds its own id and is {@code CLAIMED}, not taken
	 * by another instance.
	 * @throws IllegalArgumentException if the key is empty or contains a brace, or the ttl is
	 * below one millisecond
	 * @throws LockBackendException if Redis cannot be reached or answers with an error
	 */
	@Override
	public TickClaim claimTick(String key, Instant tick, Duration tolerance, Duration ttl) {
		return this.tickClaims.claimTick(key, tick, tolerance, ttl);
	}

	/** {@code SCAN} of the lock keys under the prefix (every master), then a script call per lock. */
	@Override
	public Listing listLocks(String prefix, int max) {
		return this.clusterLocks.listLocks(prefix, max);
	}

	@Override
	public ClusterLocks.@Nullable BackendLock lock(String key) {
		return this.clusterLocks.lock(key);
	}

	/** Deletes the lock, whoever holds it, in one script call; its fencing counter stays. */
	@Override
	public boolean forceRelease(String key, @Nullable Long fencingToken) {
		return this.clusterLocks.forceRelease(key, fencingToken);
	}

	/** {@code GET {<key>}:tick}: the tick in its record. */
	@Override
	public @Nullable Instant lastClaimedTick(String key) {
		return this.tickClaims.lastClaimedTick(key);
	}

	/**
	 * Calls {@code listener} with the key of every contended lock (one that another client failed
	 * to acquire while it was held) released through this channel by any process; releases that
	 * nobody waited for are not announced. All calls share the backend's single subscription.
	 * Delivery is best effort (see the type's documentation); the listener runs on the Redis
	 * client's I/O thread and must not block.
	 * <p>
	 * Never waits for the network: the first call opens the subscription on a thread of the
	 * backend, which retries every second until Redis answers (after that, the subscription
	 * follows the client's reconnections by itself). Until it listens ({@link #isListening()}),
	 * releases are not delivered and the engine's polling alone wakes waiters.
	 * @return a handle that stops deliveries to this listener when closed
	 * @throws IllegalStateException if the backend is closed
	 */
	@Override
	public AutoCloseable subscribe(Consumer<String> listener) {
		return this.subscription.subscribe(listener, null);
	}

	/**
	 * {@link #subscribe(Consumer)}, and also calls {@code reserved} with the key and the owner of
	 * each waiter that a release reserved a lock for, published as {@code {<key>}<owner>}.
	 */
	@Override
	public AutoCloseable subscribe(Consumer<String> released, Reservations reserved) {
		return this.subscription.subscribe(released, reserved);
	}

	/** Whether the release subscription is open and listening. */
	@Override
	public boolean isListening() {
		return this.subscription.isListening();
	}

	/**
	 * Sends {@code PING} through the connection factory (on Redis Cluster, to every master),
	 * bounded by the factory's command timeout. Details: whether Redis runs as a cluster, and the
	 * release channel.
	 * @throws LockBackendException if Redis cannot be reached
	 */
	@Override
	public Check checkHealth() {
		try (RedisConnection connection = this.connectionFactory.getConnection()) {
			String reply = connection.ping();
			Map<String, Object> details = new LinkedHashMap<>();
			details.put("cluster", connection instanceof RedisClusterConnection);
			details.put("channel", this.channel);
			if ("PONG".equalsIgnoreCase(reply)) {
				return Check.up(details);
			}
			details.put("ping", String.valueOf(reply));
			return Check.down(details);
		}
		catch (RuntimeException ex) {
			Throwable cause = NestedExceptionUtils.getMostSpecificCause(ex);
			throw new LockBackendException(
					"Redis PING failed: " + cause.getClass().getSimpleName() + ": " + cause.getMessage(), ex);
		}
	}

	/**
	 * Closes the release subscription and the connections opened for acquisitions that replicas
	 * acknowledge; later subscriptions and such acquisitions are refused. Locks held in Redis are
	 * not touched (the engine releases its leases before it closes the backend), and the
	 * connection factory, which belongs to the application, stays open.
	 */
	@Override
	public void close() {
		this.subscription.close();
		if (this.acknowledged != null) {
			this.acknowledged.close();
		}
	}

}
