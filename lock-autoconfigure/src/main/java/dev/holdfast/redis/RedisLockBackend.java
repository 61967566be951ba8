package dev.holdfast.redis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;
import java.util.function.Function;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.core.NestedExceptionUtils;
import org.springframework.data.redis.connection.ClusterSlotHashUtil;
import org.springframework.data.redis.connection.Message;
import org.springframework.data.redis.connection.MessageListener;
import org.springframework.data.redis.connection.RedisClusterConnection;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisPipelineException;
import org.springframework.data.redis.connection.ReturnType;
import org.springframework.data.redis.core.script.RedisScript;
import org.springframework.data.redis.listener.ChannelTopic;
import org.springframework.data.redis.listener.RedisMessageListenerContainer;
import org.springframework.util.Assert;
import org.springframework.util.ClassUtils;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.BackendHealth;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.TickClaims;

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
 * {@code NOSCRIPT}, e.g. after a restart). Renewal of any number of locks is one script call on
 * a standalone Redis, and one pipelined batch (one script call per hash slot) on Redis
 * Cluster.</li>
 * <li><b>Waiting.</b> A failed acquisition marks the held lock as contended, in the same script:
 * it appends {@code *} to the lock's value (owners therefore must not end with {@code *}), so the
 * mark lives, is renewed and is deleted with the lock. Releasing a contended lock publishes its
 * key on one channel ({@value #DEFAULT_CHANNEL} by default); an uncontended release publishes
 * nothing, so pub/sub traffic grows with contention, not with the number of releases. The mark
 * stays until the release, so a waiter whose subscription listens by then hears the release of
 * the holder it met, however late its subscription opened. {@link #subscribe} listens to that
 * channel through one subscription per backend instance, opened on first use and closed by
 * {@link #close()}; messages are handed to listeners on the client's I/O thread, without a
 * thread per message.
 * Pub/sub delivery is best effort: a message published while a subscriber is disconnected is
 * lost, and an expiry publishes nothing, so the engine also polls. A failed acquisition reports
 * the holder's remaining time to live ({@code PTTL}), which bounds the polling.</li>
 * <li><b>Fencing tokens.</b> Each successful acquisition sets the counter {@code {<key>}:fence}
 * to {@code max(counter + 1, Redis TIME in microseconds)} in the same script and returns it.
 * Within one Redis, scripts run one at a time, so a later holder's token is larger than every
 * earlier holder's as long as the counter survives. When it does not (a Redis without
 * persistence restarts, or the counter's 24-hour expiry passes without an acquisition), the
 * token falls back to Redis's clock, which is at least as large as every earlier token
 * provided that Redis's clock has not stepped back: an earlier token was at most the clock at
 * its time plus the number of acquisitions made faster than one per microsecond, a margin
 * that the clock overtakes within microseconds. Hence the counter may expire after 24 hours
 * without losing order, and no key lives forever. Tokens stay below 2<sup>53</sup> (Lua
 * numbers are doubles); an acquisition that would pass it fails.</li>
 * <li><b>Redis Cluster.</b> Lock key and counter share the hash tag {@code {<key>}}, so both
 * live in one slot. Keys must therefore not contain braces.</li>
 * <li><b>Failures.</b> Every Redis error or timeout becomes a {@link LockBackendException}
 * naming the operation and the key. How long a call can take when Redis does not answer is the
 * connection factory's command timeout ({@code spring.data.redis.timeout}).</li>
 * <li><b>Non-blocking.</b> The backend made by {@link #of} on a standalone or Sentinel
 * {@code LettuceConnectionFactory} that shares its native connection (the default) is also an
 * {@link AsyncLockBackend}: acquire and release send the same scripts on that shared Lettuce
 * connection and complete on its I/O thread, or fail with {@link LockBackendException} after the
 * command timeout. Reactive callers then never block a thread. Its blocking acquire and release
 * use that connection directly too, without spring-data-redis's per-call objects.</li>
 * </ul>
 * A failover to a replica that had not received the latest writes can lose a lock or a
 * counter; Redis replication is asynchronous. Use the Redlock backend where that matters.
 */
public class RedisLockBackend
		implements LockBackend, LeaseRenewal, ReleaseEvents, BackendHealth, TickClaims, AutoCloseable {

	/** The channel on which releases are published unless another one is configured. */
	public static final String DEFAULT_CHANNEL = "holdfast:released";

	/** How long a fencing counter lives after the last acquisition of its lock. */
	static final Duration FENCE_TTL = Duration.ofHours(24);

	/** Tokens stay below 2^53: Lua numbers are doubles. */
	static final long MAX_TOKEN = 1L << 53;

	/** How long a subscription attempt may take, and the pause between two after Redis failed. */
	private static final Duration SUBSCRIPTION_RECOVERY = Duration.ofSeconds(1);

	/** Keys per renewal script on a standalone Redis, so that one script never blocks Redis long. */
	private static final int RENEW_CHUNK = 10_000;

	private static final Log logger = LogFactory.getLog(RedisLockBackend.class);

	/**
	 * Suffix that a failed acquisition appends to the holder's value: someone waits, so the
	 * release must announce itself. Owners never end with it.
	 */
	static final char CONTENDED = '*';

	// A failed attempt marks the lock as contended in the lock's own value, so the mark lives,
	// is renewed and is deleted with the lock, and needs no key of its own.
	@SuppressWarnings("rawtypes")
	static final RedisScript<List> ACQUIRE = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
				local time = redis.call('TIME')
				local token = tonumber(time[1]) * 1000000 + tonumber(time[2])
				local last = tonumber(redis.call('GET', KEYS[2]))
				if last and last >= token then token = last + 1 end
				if token >= 9007199254740992 then
					redis.call('DEL', KEYS[1])
					return redis.error_reply('fencing counter ' .. KEYS[2] .. ' reached 2^53')
				end
				redis.call('SET', KEYS[2], string.format('%d', token), 'PX', ARGV[3])
				return {1, token}
			end
			local holder = redis.call('GET', KEYS[1])
			if holder and string.sub(holder, -1) ~= '*' then redis.call('APPEND', KEYS[1], '*') end
			return {0, redis.call('PTTL', KEYS[1])}
			""", List.class);

	// Only a contended lock (see ACQUIRE) publishes its release: no pub/sub traffic otherwise.
	static final RedisScript<Long> RELEASE = RedisScript.of("""
			local holder = redis.call('GET', KEYS[1])
			if holder == ARGV[1] then
				redis.call('DEL', KEYS[1])
				return 1
			end
			if holder == ARGV[1] .. '*' then
				redis.call('DEL', KEYS[1])
				redis.call('PUBLISH', ARGV[2], ARGV[3])
				return 1
			end
			return 0
			""", Long.class);

	@SuppressWarnings("rawtypes")
	static final RedisScript<List> RENEW = RedisScript.of("""
			local renewed = {}
			for i = 1, #KEYS do
				local holder = redis.call('GET', KEYS[i])
				local owner = ARGV[2 * i - 1]
				if holder == owner or holder == owner .. '*' then
					redis.call('PEXPIRE', KEYS[i], ARGV[2 * i])
					renewed[#renewed + 1] = i
				end
			end
			return renewed
			""", List.class);

	// KEYS: the job's tick record. ARGV: tick ms, ttl ms. The record only moves forward.
	static final RedisScript<Long> CLAIM_TICK = RedisScript.of("""
			local last = tonumber(redis.call('GET', KEYS[1]) or '-1')
			if last ~= nil and last >= tonumber(ARGV[1]) then
				return 0
			end
			redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
			return 1
			""", Long.class);

	private static final boolean LETTUCE_PRESENT = ClassUtils.isPresent("io.lettuce.core.RedisClient",
			RedisLockBackend.class.getClassLoader());

	private static final byte[] FENCE_TTL_MILLIS = bytes(Long.toString(FENCE_TTL.toMillis()));

	private final RedisConnectionFactory connectionFactory;

	private final String channel;

	private final byte[] channelBytes;

	private final List<Consumer<String>> listeners = new CopyOnWriteArrayList<>();

	private final ReentrantLock lifecycleLock = new ReentrantLock();

	/** One daemon thread, started on first subscription, that (re)subscribes for the container. */
	private final ExecutorService subscriptionExecutor = daemonThread("holdfast-redis-subscription");

	/**
	 * One daemon thread that opens the subscription the first time, retrying until Redis answers:
	 * opening it can wait for a connection timeout (a silent network drops the handshake), and
	 * no caller may wait for that.
	 */
	private final ExecutorService openingExecutor = daemonThread("holdfast-redis-subscribe");

	private @Nullable RedisMessageListenerContainer container;

	private boolean opening;

	private volatile boolean closed;

	/**
	 * Creates a backend that publishes releases on {@value #DEFAULT_CHANNEL}.
	 */
	public RedisLockBackend(RedisConnectionFactory connectionFactory) {
		this(connectionFactory, DEFAULT_CHANNEL);
	}

	/**
	 * Creates a backend.
	 * @param connectionFactory the application's connection factory; its command timeout bounds
	 * every call
	 * @param channel the pub/sub channel on which releases are published; every process that
	 * shares the locks must use the same one
	 */
	public RedisLockBackend(RedisConnectionFactory connectionFactory, String channel) {
		Assert.notNull(connectionFactory, "'connectionFactory' must not be null");
		Assert.hasText(channel, "'channel' must not be empty");
		this.connectionFactory = connectionFactory;
		this.channel = channel;
		this.channelBytes = bytes(channel);
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
		LettuceScripts scripts = LETTUCE_PRESENT ? LettuceScripts.of(connectionFactory, RedisLockBackend::isNoScript)
				: null;
		return (scripts != null) ? new NonBlocking(connectionFactory, channel, scripts)
				: new RedisLockBackend(connectionFactory, channel);
	}

	/** Returns {@code redis}. */
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
	 * or ends with {@code *}, or the ttl is below one millisecond
	 * @throws LockBackendException if Redis cannot be reached or answers with an error
	 */
	@Override
	public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
		byte[][] keys = acquireKeys(key);
		byte[][] args = acquireArguments(owner, ttl);
		List<?> reply;
		try {
			reply = eval(ACQUIRE, ReturnType.MULTI, keys, args);
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

	/** {@link #tryAcquire} without blocking, for {@link NonBlocking}. */
	final CompletionStage<AcquireResult> acquireAsync(LettuceScripts scripts, String key, String owner,
			Duration ttl) {
		try {
			byte[][] keys = acquireKeys(key);
			byte[][] args = acquireArguments(owner, ttl);
			return complete(scripts.<List<?>>evalAsync(ACQUIRE, ReturnType.MULTI, keys, args), "acquire", key,
					(reply) -> acquireResult(key, reply));
		}
		catch (RuntimeException ex) {
			return CompletableFuture.failedFuture(ex);
		}
	}

	/** {@link #release} without blocking, for {@link NonBlocking}. */
	final CompletionStage<Boolean> releaseAsync(LettuceScripts scripts, String key, String owner) {
		try {
			byte[][] keys = { lockKey(key) };
			byte[][] args = releaseArguments(key, owner);
			return complete(scripts.evalAsync(RELEASE, ReturnType.INTEGER, keys, args), "release", key,
					RedisLockBackend::released);
		}
		catch (RuntimeException ex) {
			return CompletableFuture.failedFuture(ex);
		}
	}

	private static <T, R> CompletableFuture<R> complete(CompletableFuture<T> reply, String operation, String key,
			Function<@Nullable T, R> convert) {
		CompletableFuture<R> result = new CompletableFuture<>();
		reply.whenComplete((value, ex) -> {
			if (ex != null) {
				result.completeExceptionally(failure(operation, key, ex));
				return;
			}
			try {
				result.complete(convert.apply(value));
			}
			catch (RuntimeException conversionFailure) {
				result.completeExceptionally(failure(operation, key, conversionFailure));
			}
		});
		return result;
	}

	private static byte[][] acquireKeys(String key) {
		return new byte[][] { lockKey(key), fenceKey(key) };
	}

	private static byte[][] acquireArguments(String owner, Duration ttl) {
		return new byte[][] { ownerBytes(owner), bytes(Long.toString(ttlMillis(ttl))), FENCE_TTL_MILLIS };
	}

	private byte[][] releaseArguments(String key, String owner) {
		return new byte[][] { ownerBytes(owner), this.channelBytes, bytes(key) };
	}

	private static AcquireResult acquireResult(String key, @Nullable List<?> reply) {
		if (reply == null || reply.size() != 2 || !(reply.get(0) instanceof Number status)
				|| !(reply.get(1) instanceof Number value)) {
			throw new LockBackendException("Redis acquire of lock '" + key + "' gave an unexpected reply: " + reply,
					null);
		}
		if (status.longValue() == 1) {
			long token = value.longValue();
			if (token <= 0 || token >= MAX_TOKEN) {
				throw new LockBackendException(
						"Redis acquire of lock '" + key + "' gave fencing token " + token + ", outside 1..2^53", null);
			}
			return AcquireResult.acquired(token);
		}
		long remaining = value.longValue();
		return AcquireResult.held((remaining >= 0) ? remaining : -1);
	}

	/**
	 * Deletes the lock with one script call if {@code owner} holds it, and then, if another client
	 * failed to acquire it meanwhile, publishes the key on the release channel.
	 * @throws IllegalArgumentException if the key or owner is not one that {@link #tryAcquire}
	 * accepts
	 * @throws LockBackendException if Redis cannot be reached or answers with an error
	 */
	@Override
	public boolean release(String key, String owner) {
		byte[][] keys = { lockKey(key) };
		byte[][] args = releaseArguments(key, owner);
		Object reply;
		try {
			reply = eval(RELEASE, ReturnType.INTEGER, keys, args);
		}
		catch (RuntimeException ex) {
			throw failure("release", key, ex);
		}
		return released(reply);
	}

	private static boolean released(@Nullable Object reply) {
		return reply instanceof Number number && number.longValue() == 1;
	}

	/**
	 * Sets each lock's time to live where its owner still holds it: one script call on a
	 * standalone or Sentinel Redis (per 10,000 keys, so that one script never blocks Redis long),
	 * one pipelined batch with one script call per hash slot on Redis Cluster.
	 * @throws LockBackendException if Redis cannot be reached or answers with an error; which
	 * locks were renewed is unknown then
	 */
	@Override
	public Set<String> renew(Collection<HeldLock> locks) {
		if (locks.isEmpty()) {
			return Set.of();
		}
		List<HeldLock> batch = new ArrayList<>(locks);
		for (HeldLock lock : batch) {
			lockKey(lock.key());
			checkOwner(lock.owner());
			ttlMillis(lock.ttl());
		}
		try (RedisConnection connection = this.connectionFactory.getConnection()) {
			if (connection instanceof RedisClusterConnection) {
				return renewBySlot(connection, batch);
			}
			Set<String> renewed = new HashSet<>();
			for (int from = 0; from < batch.size(); from += RENEW_CHUNK) {
				List<HeldLock> chunk = batch.subList(from, Math.min(batch.size(), from + RENEW_CHUNK));
				List<?> reply = evalSha(connection, RENEW, ReturnType.MULTI, chunk.size(), renewArguments(chunk));
				collectRenewed(chunk, reply, renewed);
			}
			return renewed;
		}
		catch (RuntimeException ex) {
			throw failure(describe(batch), ex);
		}
	}

	private Set<String> renewBySlot(RedisConnection connection, List<HeldLock> locks) {
		Map<Integer, List<HeldLock>> bySlot = new LinkedHashMap<>();
		for (HeldLock lock : locks) {
			bySlot.computeIfAbsent(ClusterSlotHashUtil.calculateSlot(lockKey(lock.key())), (slot) -> new ArrayList<>())
				.add(lock);
		}
		List<List<HeldLock>> groups = new ArrayList<>(bySlot.values());
		List<Object> replies;
		try {
			replies = pipelineRenew(connection, groups, false);
		}
		catch (RedisPipelineException ex) {
			if (!isNoScript(ex) && ex.getPipelineResult().stream().noneMatch(RedisLockBackend::isNoScript)) {
				throw ex;
			}
			// Some node lost its script cache: send the whole batch again as EVAL (renewal is
			// idempotent).
			replies = pipelineRenew(connection, groups, true);
		}
		Set<String> renewed = new HashSet<>();
		for (int i = 0; i < groups.size(); i++) {
			collectRenewed(groups.get(i), (List<?>) replies.get(i), renewed);
		}
		return renewed;
	}

	private List<Object> pipelineRenew(RedisConnection connection, List<List<HeldLock>> groups, boolean sendScript) {
		connection.openPipeline();
		for (List<HeldLock> group : groups) {
			if (sendScript) {
				connection.scriptingCommands()
					.eval(bytes(RENEW.getScriptAsString()), ReturnType.MULTI, group.size(), renewArguments(group));
			}
			else {
				connection.scriptingCommands()
					.evalSha(RENEW.getSha1(), ReturnType.MULTI, group.size(), renewArguments(group));
			}
		}
		return connection.closePipeline();
	}

	private byte[][] renewArguments(List<HeldLock> locks) {
		int size = locks.size();
		byte[][] keysAndArgs = new byte[size * 3][];
		for (int i = 0; i < size; i++) {
			HeldLock lock = locks.get(i);
			keysAndArgs[i] = lockKey(lock.key());
			keysAndArgs[size + 2 * i] = ownerBytes(lock.owner());
			keysAndArgs[size + 2 * i + 1] = bytes(Long.toString(ttlMillis(lock.ttl())));
		}
		return keysAndArgs;
	}

	private static void collectRenewed(List<HeldLock> locks, @Nullable List<?> reply, Set<String> renewed) {
		if (reply == null) {
			throw new LockBackendException("Redis renew gave no reply", null);
		}
		for (Object index : reply) {
			renewed.add(locks.get(((Number) index).intValue() - 1).key());
		}
	}

	/**
	 * Claims a tick with one script call on the key {@code {<key>}:tick}, which holds the last
	 * claimed tick in milliseconds and expires {@code ttl} after the last successful claim: a
	 * scheduled job keeps one such key however often it ticks, and no fencing counter.
	 * @throws IllegalArgumentException if the key is empty or contains a brace, or the ttl is
	 * below one millisecond
	 * @throws LockBackendException if Redis cannot be reached or answers with an error
	 */
	@Override
	public boolean claimTick(String key, Instant tick, Duration ttl) {
		lockKey(key);
		byte[][] keys = { bytes("{" + key + "}:tick") };
		byte[][] args = { bytes(Long.toString(tick.toEpochMilli())), bytes(Long.toString(ttlMillis(ttl))) };
		Object reply;
		try (RedisConnection connection = this.connectionFactory.getConnection()) {
			reply = evalSha(connection, CLAIM_TICK, ReturnType.INTEGER, keys, args);
		}
		catch (RuntimeException ex) {
			throw failure("tick claim", key, ex);
		}
		return reply instanceof Number number && number.longValue() == 1;
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
		Assert.notNull(listener, "'listener' must not be null");
		this.lifecycleLock.lock();
		try {
			if (this.closed) {
				throw new IllegalStateException("The Redis lock backend is closed");
			}
			this.listeners.add(listener);
			if (!this.opening) {
				this.opening = true;
				this.openingExecutor.execute(this::openSubscription);
			}
		}
		finally {
			this.lifecycleLock.unlock();
		}
		return () -> this.listeners.remove(listener);
	}

	/** Whether the release subscription is open and listening. */
	boolean isListening() {
		RedisMessageListenerContainer current = this.container;
		return current != null && current.isListening();
	}

	/** Opens the subscription, once a second until Redis answers or the backend closes. */
	private void openSubscription() {
		int failures = 0;
		while (!Thread.currentThread().isInterrupted()) {
			RedisMessageListenerContainer candidate = newContainer();
			this.lifecycleLock.lock();
			try {
				if (this.closed) {
					return;
				}
				this.container = candidate;
			}
			finally {
				this.lifecycleLock.unlock();
			}
			try {
				candidate.start();
				if (failures > 0) {
					logger.info("Redis subscription to channel '" + this.channel + "' open after " + failures
							+ " failed attempt(s)");
				}
				return;
			}
			catch (RuntimeException ex) {
				destroy(candidate);
				failures++;
				String message = "Redis subscribe to channel '" + this.channel + "' failed (attempt " + failures
						+ "); waiters poll until it opens: " + NestedExceptionUtils.getMostSpecificCause(ex).getMessage();
				if (failures == 1) {
					logger.warn(message);
				}
				else {
					logger.debug(message);
				}
			}
			try {
				Thread.sleep(SUBSCRIPTION_RECOVERY.toMillis());
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}
	}

	private RedisMessageListenerContainer newContainer() {
		RedisMessageListenerContainer listenerContainer = new RedisMessageListenerContainer();
		listenerContainer.setConnectionFactory(this.connectionFactory);
		// Listeners must not block: running them on the client's I/O thread avoids a thread per
		// message.
		listenerContainer.setTaskExecutor(Runnable::run);
		// Re-subscribing after Redis comes back waits and sleeps: on a thread of ours, never on a
		// caller's (the task executor above is the default for it).
		listenerContainer.setSubscriptionExecutor(this.subscriptionExecutor);
		listenerContainer.setRecoveryInterval(SUBSCRIPTION_RECOVERY.toMillis());
		listenerContainer.setMaxSubscriptionRegistrationWaitingTime(SUBSCRIPTION_RECOVERY.toMillis());
		listenerContainer.setBeanName("holdfastReleaseEvents");
		listenerContainer.setErrorHandler((ex) -> logger.warn("Release notification failed", ex));
		listenerContainer.addMessageListener(new Dispatcher(), new ChannelTopic(this.channel));
		listenerContainer.afterPropertiesSet();
		return listenerContainer;
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
	 * Closes the release subscription; later subscriptions are refused. Locks held in Redis are
	 * not touched (the engine releases its leases before it closes the backend), and the
	 * connection factory, which belongs to the application, stays open.
	 */
	@Override
	public void close() {
		RedisMessageListenerContainer toClose;
		this.lifecycleLock.lock();
		try {
			this.closed = true;
			toClose = this.container;
			this.container = null;
		}
		finally {
			this.lifecycleLock.unlock();
		}
		this.listeners.clear();
		this.openingExecutor.shutdownNow();
		if (toClose != null) {
			destroy(toClose);
		}
		this.subscriptionExecutor.shutdownNow();
	}

	private static ExecutorService daemonThread(String name) {
		return Executors.newSingleThreadExecutor((task) -> {
			Thread thread = new Thread(task, name);
			thread.setDaemon(true);
			return thread;
		});
	}

	private static void destroy(RedisMessageListenerContainer listenerContainer) {
		try {
			listenerContainer.destroy();
		}
		catch (Exception ex) {
			logger.debug("Could not close the Redis release subscription", ex);
		}
	}

	private <T> T evalSha(RedisConnection connection, RedisScript<?> script, ReturnType type, byte[][] keys,
			byte[][] args) {
		byte[][] keysAndArgs = new byte[keys.length + args.length][];
		System.arraycopy(keys, 0, keysAndArgs, 0, keys.length);
		System.arraycopy(args, 0, keysAndArgs, keys.length, args.length);
		return evalSha(connection, script, type, keys.length, keysAndArgs);
	}

	private <T> T evalSha(RedisConnection connection, RedisScript<?> script, ReturnType type, int numKeys,
			byte[]... keysAndArgs) {
		try {
			return connection.scriptingCommands().evalSha(script.getSha1(), type, numKeys, keysAndArgs);
		}
		catch (RuntimeException ex) {
			if (!isNoScript(ex)) {
				throw ex;
			}
			// Redis lost its script cache (restart, SCRIPT FLUSH): EVAL caches the script again.
			return connection.scriptingCommands().eval(bytes(script.getScriptAsString()), type, numKeys, keysAndArgs);
		}
	}

	private static boolean isNoScript(@Nullable Object candidate) {
		Throwable current = (candidate instanceof Throwable throwable) ? throwable : null;
		while (current != null) {
			String message = current.getMessage();
			if (message != null && message.contains("NOSCRIPT")) {
				return true;
			}
			current = (current.getCause() != current) ? current.getCause() : null;
		}
		return false;
	}

	private static LockBackendException failure(String operation, String key, Throwable ex) {
		return failure(operation + " of lock '" + key + "'", ex);
	}

	private static LockBackendException failure(String what, Throwable ex) {
		if (ex instanceof CompletionException && ex.getCause() != null) {
			ex = ex.getCause();
		}
		if (ex instanceof LockBackendException backendException) {
			return backendException;
		}
		Throwable cause = NestedExceptionUtils.getMostSpecificCause(ex);
		String detail = (cause instanceof TimeoutException) ? "no answer within the command timeout"
				: cause.getMessage();
		return new LockBackendException(
				"Redis " + what + " failed: " + cause.getClass().getSimpleName() + ": " + detail, ex);
	}

	private static String describe(List<HeldLock> locks) {
		String first = "'" + locks.get(0).key() + "'";
		return (locks.size() == 1) ? "renew of lock " + first
				: "renew of locks " + first + " and " + (locks.size() - 1) + " more";
	}

	private static byte[] lockKey(String key) {
		Assert.hasLength(key, "Lock key must not be empty");
		if (key.indexOf('{') >= 0 || key.indexOf('}') >= 0) {
			throw new IllegalArgumentException("Lock key '" + key
					+ "' must not contain '{' or '}': the Redis backend wraps keys in a hash tag");
		}
		return bytes("{" + key + "}");
	}

	private static byte[] fenceKey(String key) {
		return bytes("{" + key + "}:fence");
	}

	private static byte[] ownerBytes(String owner) {
		return bytes(checkOwner(owner));
	}

	private static String checkOwner(String owner) {
		Assert.hasLength(owner, "Lock owner must not be empty");
		if (owner.charAt(owner.length() - 1) == CONTENDED) {
			throw new IllegalArgumentException("Lock owner '" + owner + "' must not end with '" + CONTENDED
					+ "': the Redis backend appends it to a held lock's value when another client waits");
		}
		return owner;
	}

	private static long ttlMillis(Duration ttl) {
		long millis = ttl.toMillis();
		if (millis < 1) {
			throw new IllegalArgumentException("Lock ttl must be at least 1ms, was " + ttl);
		}
		return millis;
	}

	private static byte[] bytes(String value) {
		return value.getBytes(StandardCharsets.UTF_8);
	}

	private final class Dispatcher implements MessageListener {

		@Override
		public void onMessage(Message message, byte @Nullable [] pattern) {
			String key = new String(message.getBody(), StandardCharsets.UTF_8);
			for (Consumer<String> listener : RedisLockBackend.this.listeners) {
				try {
					listener.accept(key);
				}
				catch (RuntimeException ex) {
					logger.warn("Release listener failed for lock '" + key + "'", ex);
				}
			}
		}

	}

	/**
	 * The backend with its non-blocking ability, on a Lettuce factory's shared connection: see
	 * {@link RedisLockBackend#of}.
	 */
	static final class NonBlocking extends RedisLockBackend implements AsyncLockBackend {

		private final LettuceScripts scripts;

		NonBlocking(RedisConnectionFactory connectionFactory, String channel, LettuceScripts scripts) {
			super(connectionFactory, channel);
			this.scripts = scripts;
		}

		/** Blocking calls, too, go straight to the shared Lettuce connection. */
		@Override
		<T> T eval(RedisScript<?> script, ReturnType type, byte[][] keys, byte[][] args) {
			return this.scripts.eval(script, type, keys, args);
		}

		/**
		 * {@link #tryAcquire} in one round trip without blocking; the stage completes on a Lettuce
		 * I/O thread, or fails with {@link LockBackendException} on a Redis error or after the
		 * factory's command timeout.
		 */
		@Override
		public CompletionStage<AcquireResult> tryAcquireAsync(String key, String owner, Duration ttl) {
			return acquireAsync(this.scripts, key, owner, ttl);
		}

		/**
		 * {@link #release} in one round trip without blocking; failures as for
		 * {@link #tryAcquireAsync}.
		 */
		@Override
		public CompletionStage<Boolean> releaseAsync(String key, String owner) {
			return releaseAsync(this.scripts, key, owner);
		}

	}

}
