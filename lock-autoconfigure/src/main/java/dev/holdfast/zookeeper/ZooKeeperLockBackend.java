package dev.holdfast.zookeeper;

import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.api.BackgroundCallback;
import org.apache.curator.framework.api.CuratorEvent;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.utils.PathUtils;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.KeeperException.Code;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockInterruptedException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.BackendHealth;
import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.SessionLeases;
import dev.holdfast.spi.SharedLocks;
import dev.holdfast.spi.TickClaims;
import dev.holdfast.spi.WaitQueue;

/**
 * Locks in a ZooKeeper ensemble, through Apache Curator's framework API: one ephemeral
 * sequential node per acquisition under a per-key container node
 * ({@code <base-path>/locks/<key>}); the node with the lowest sequence holds the lock.
 * <ul>
 * <li>Not reentrant (the engine above is), and bound to no thread: any thread may release or
 * renew a lock by its owner token.</li>
 * <li>Lifetime: a lock lives while the session that created its node lives <em>and</em> until its
 * time to live (the node's data) runs out past the node's {@code mtime}, which renewal moves;
 * expiry is judged by the ensemble's clock only, and an expired holder's node is deleted with a
 * version check, so that a renewal that got there first wins (ZK-2, ZK-3).</li>
 * <li>Waiting ({@link WaitQueue}): a waiter watches only the node before it, so a release wakes
 * one waiter, which holds once its own node is confirmed on its session (ZK-1, ZK-5).</li>
 * <li>One attempt ({@code waitTime} zero) takes a free lock in one transaction and writes nothing
 * under a held lock's key; only a holder expired by a fresh read makes it queue a node (ZK-6).</li>
 * <li>A create whose outcome is unknown after a connection loss uses Curator's protected mode, and
 * one that finally fails deletes its node in the background: no orphan node holds the lock.</li>
 * <li>Fencing tokens are the lock node's {@code czxid}: zxids grow with every write across the
 * ensemble, and a later holder's node was created after every earlier holder's.</li>
 * <li>Sessions ({@link SessionLeases}, ZK-8): no lock counts as valid while suspended or past the
 * session's bound; a lost session loses every lock. Bounded calls (ZK-9) and tick claims: DESIGN.md.</li>
 * <li>Operators ({@link ClusterLocks}): the holder of each key, node by node; a forced release
 * deletes the holder's node.</li>
 * <li>Releases ({@link ReleaseEvents}, ZK-10): of keys this process was refused, by one-shot watches.</li>
 * <li>Read holds ({@link SharedLocks}, RWL-40 to RWL-45): reader nodes in the same queue; a node is the lease.</li>
 * </ul> Local state is bounded by the locks this process holds.
 */
public class ZooKeeperLockBackend implements LockBackend, WaitQueue, LeaseRenewal, SharedLocks, SessionLeases,
		ReleaseEvents, BackendHealth, TickClaims, ClusterLocks, AutoCloseable {

	private static final Log logger = LogFactory.getLog(ZooKeeperLockBackend.class);

	/** The default base path under which Holdfast keeps its nodes. */
	public static final String DEFAULT_BASE_PATH = "/holdfast";

	private static final long SWEEP_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);

	private final CuratorFramework client;

	private final boolean ownsClient;

	private final String basePath;

	private final long connectionTimeoutMillis;

	private final ZooKeeperTickClaims ticks;

	/** The lock nodes of this process, by owner token. */
	private final ConcurrentHashMap<String, ZooKeeperHold> holds = new ConcurrentHashMap<>();

	private final ZooKeeperTryOnce once;

	private final ZooKeeperLockQueue queue;

	private final ZooKeeperReadHolds reads;

	private final ZooKeeperSession session;

	private final ZooKeeperRenewal renewal;

	private final ZooKeeperHealth health;

	private final ZooKeeperClusterLocks clusterLocks = new ZooKeeperClusterLocks(this);

	private final AtomicLong nextSweepNanos = new AtomicLong(System.nanoTime() + SWEEP_EVERY_NANOS);

	private ZooKeeperLockBackend(CuratorFramework client, String basePath, boolean ownsClient) {
		if (client.getState() != CuratorFrameworkState.STARTED) {
			throw new IllegalStateException("The CuratorFramework is " + client.getState()
					+ ": start it before Holdfast uses it (CuratorFramework.start())");
		}
		PathUtils.validatePath(basePath);
		this.client = client;
		this.ownsClient = ownsClient;
		this.basePath = basePath.equals("/") ? "" : basePath;
		this.connectionTimeoutMillis = client.getZookeeperClient().getConnectionTimeoutMs();
		this.ticks = new ZooKeeperTickClaims(this);
		this.session = new ZooKeeperSession(client, this.holds, this.basePath.isEmpty() ? "/" : this.basePath,
				this.connectionTimeoutMillis);
		this.once = new ZooKeeperTryOnce(this);
		this.queue = new ZooKeeperLockQueue(this, this.once, this.session);
		this.reads = new ZooKeeperReadHolds(this, this.once, this.queue, this.session);
		this.renewal = new ZooKeeperRenewal(this, this.holds, this.session);
		this.health = new ZooKeeperHealth(this, this.session, this.basePath, this.connectionTimeoutMillis);
	}

	/**
	 * A backend on the application's started client, which it does not close.
	 * @param client a started Curator client
	 * @param basePath the node under which locks and tick records are kept, e.g.
	 * {@value #DEFAULT_BASE_PATH}
	 */
	public static ZooKeeperLockBackend of(CuratorFramework client, String basePath) {
		return new ZooKeeperLockBackend(client, basePath, false);
	}

	/**
	 * A backend that owns {@code client}: it closes the client when it is closed.
	 * @param client a started Curator client
	 * @param basePath the node under which locks and tick records are kept
	 */
	public static ZooKeeperLockBackend owning(CuratorFramework client, String basePath) {
		return new ZooKeeperLockBackend(client, basePath, true);
	}

	@Override
	public String name() {
		return "zookeeper";
	}

	@Override
	public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
		return tryOnce(key, owner, ttl, false);
	}

	/** One attempt at a read hold (RWL-42); {@code recordFor} is not used: the engine hands this backend the wait. */
	@Override
	public AcquireResult tryAcquireShared(String key, String owner, Duration ttl, Duration recordFor) {
		return tryOnce(key, owner, ttl, true);
	}

	private AcquireResult tryOnce(String key, String owner, Duration ttl, boolean reader) {
		try {
			return acquire(key, owner, ttl, Duration.ZERO, reader).result();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(key, ex);
		}
	}

	@Override
	public Outcome acquire(String key, String owner, Duration ttl, Duration maxWait) throws InterruptedException {
		return acquire(key, owner, ttl, maxWait, false);
	}

	/** A read hold that waits in the key's queue (RWL-40, RWL-41). */
	@Override
	public Outcome acquireShared(String key, String owner, Duration ttl, Duration maxWait) throws InterruptedException {
		return acquire(key, owner, ttl, maxWait, true);
	}

	private Outcome acquire(String key, String owner, Duration ttl, Duration maxWait, boolean reader)
			throws InterruptedException {
		long attemptStart = System.nanoTime();
		sweepForgottenHolds(attemptStart);
		this.session.acquiring();
		try {
			awaitConnected("acquire", key);
			return (reader) ? this.reads.acquire(key, owner, ttl, maxWait, attemptStart)
					: this.queue.acquire(key, owner, ttl, maxWait, attemptStart, false);
		}
		finally {
			this.session.acquisitionEnded();
		}
	}

	@Override
	public boolean release(String key, String owner) {
		ZooKeeperHold hold = this.holds.get(owner);
		if (hold == null || !hold.key.equals(key) || !this.holds.remove(owner, hold)) {
			return false;
		}
		this.once.released(hold.path);
		if (!this.client.getZookeeperClient().isConnected()) {
			deleteInBackground(hold.path);
			throw new LockBackendException("The zookeeper backend is not connected: lock '" + key
					+ "' is released in the background once it is (" + this.session.state() + ")", null);
		}
		long sent = System.nanoTime();
		CuratorEvent event;
		try {
			// Guaranteed: a delete that fails is retried in the background until the session ends.
			event = request("release", key, sent + connectionTimeoutNanos(),
					(callback) -> this.client.delete().guaranteed().inBackground(callback).forPath(hold.path));
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(key, ex);
		}
		Code code = Code.get(event.getResultCode());
		if (code != Code.OK && code != Code.NONODE) {
			throw failure("release", key, event);
		}
		return code == Code.OK;
	}

	/**
	 * Rewrites each held node's time to live, which moves its {@code mtime}: all requests are sent
	 * at once and answered in one round trip. A node that is gone is not renewed.
	 */
	@Override
	public Set<String> renew(Collection<HeldLock> locks) {
		return this.renewal.renew(locks);
	}

	/** {@link #renew}: a reader's node is renewed as a lock's (RWL-40). */
	@Override
	public Set<String> renewShared(Collection<HeldLock> holds) {
		return this.renewal.renew(holds);
	}

	@Override
	public TickClaim claimTick(String key, Instant tick, Duration tolerance, Duration ttl) {
		return this.ticks.claimTick(key, tick, tolerance, ttl);
	}

	@Override
	public boolean suspended() {
		return this.session.suspended();
	}

	/** Keys whose queue changed after an attempt of this process was refused (ZK-10), on Curator's thread. */
	@Override
	public AutoCloseable subscribe(Consumer<String> listener) {
		return this.once.releases.subscribe(listener);
	}

	@Override
	public AutoCloseable onLost(LostListener listener) {
		return this.session.onLost(listener);
	}

	@Override
	public long vouchedNanos() {
		return this.session.vouchedNanos();
	}

	@Override
	public AutoCloseable onSuspended(Runnable listener) {
		return this.session.onSuspended(listener);
	}

	/**
	 * Up when the client is connected and the base path can be read within the connection
	 * timeout. Details: the connect string, the connection state and the session id.
	 */
	@Override
	public Check checkHealth() {
		return this.health.check();
	}

	/** The base path under which this backend keeps its nodes. */
	public String basePath() {
		return this.basePath.isEmpty() ? "/" : this.basePath;
	}

	/** How many locks this process holds through this backend. */
	public int size() {
		return this.holds.size();
	}

	@Override
	public Listing listLocks(String prefix, int max) {
		return this.clusterLocks.listLocks(prefix, max);
	}

	@Override
	public ClusterLocks.@Nullable BackendLock lock(String key) {
		return this.clusterLocks.lock(key);
	}

	@Override
	public boolean forceRelease(String key, @Nullable Long fencingToken) {
		return this.clusterLocks.forceRelease(key, fencingToken);
	}

	/** Stops listening to the connection; closes the client when this backend owns it. */
	@Override
	public void close() {
		this.session.close();
		if (this.ownsClient) {
			this.client.close();
		}
	}

	CuratorFramework client() {
		return this.client;
	}

	ZooKeeperLockQueue queue() {
		return this.queue;
	}

	/** The node {@code owner} holds, or {@code null}. */
	@Nullable ZooKeeperHold heldBy(String owner) {
		return this.holds.get(owner);
	}

	/** Records the lock node of {@code owner}, held since an answered request sent at {@code confirmedNanos}. */
	void hold(String owner, String key, String path, long confirmedNanos, Duration ttl) {
		this.holds.put(owner, new ZooKeeperHold(key, path, confirmedNanos, ttl.toNanos()));
		this.session.confirmed(confirmedNanos);
		this.session.holding();
	}

	String path(String child) {
		return this.basePath + "/" + child;
	}

	/** Deletes the nodes of locks this process forgot ({@code lockAtLeastFor}) well after their time ran out. */
	private void sweepForgottenHolds(long now) {
		long next = this.nextSweepNanos.get();
		if (now - next < 0 || !this.nextSweepNanos.compareAndSet(next, now + SWEEP_EVERY_NANOS)) {
			return;
		}
		for (Map.Entry<String, ZooKeeperHold> entry : this.holds.entrySet()) {
			ZooKeeperHold hold = entry.getValue();
			if (hold.forgotten(now) && this.holds.remove(entry.getKey(), hold)) {
				deleteInBackground(hold.path);
			}
		}
	}

	void deleteInBackground(String path) {
		try {
			this.client.delete().guaranteed().inBackground().forPath(path);
		}
		catch (Exception ex) {
			logger.debug("Could not delete lock node " + path + "; it goes with the session", ex);
		}
	}

	/** Waits for the connection at most the client's connection timeout, as one request would. */
	void awaitConnected(String operation, String key) throws InterruptedException {
		if (this.client.getZookeeperClient().isConnected()) {
			return;
		}
		if (!this.client.blockUntilConnected((int) this.connectionTimeoutMillis, TimeUnit.MILLISECONDS)) {
			throw new LockBackendException("The zookeeper backend could not " + operation + " lock '" + key
					+ "': not connected to " + this.client.getZookeeperClient().getCurrentConnectionString()
					+ " within " + this.connectionTimeoutMillis + " ms (" + this.session.state() + ")", null);
		}
	}

	long connectionTimeoutNanos() {
		return TimeUnit.MILLISECONDS.toNanos(this.connectionTimeoutMillis);
	}

	/** The client's session now (0 while a new one is being established); no request. */
	long sessionId() {
		return this.session.id();
	}

	/**
	 * Sends one request in the background ({@code request} hands Curator's callback on): the
	 * future completes with the answer, or never.
	 */
	CompletableFuture<CuratorEvent> send(String operation, String key, Request request) {
		CompletableFuture<CuratorEvent> answer = new CompletableFuture<>();
		try {
			request.send((client, event) -> answer.complete(event));
		}
		catch (Exception ex) {
			throw failure(operation, key, ex);
		}
		return answer;
	}

	/** Sends one request and waits for its answer as {@link #answer} does. */
	CuratorEvent request(String operation, String key, long deadline, Request request) throws InterruptedException {
		long sent = System.nanoTime();
		return answer(send(operation, key, request), sent, deadline, operation, key);
	}

	/**
	 * The answer to a request sent at {@code sent}, awaited until {@code deadline} at most (a
	 * request sent while the client reconnects is answered once it has); an answer that says OK
	 * confirms the session.
	 * @throws LockBackendException when no answer came in time
	 */
	CuratorEvent answer(CompletableFuture<CuratorEvent> answer, long sent, long deadline, String operation, String key)
			throws InterruptedException {
		CuratorEvent event = await(answer, sent, deadline, operation, key);
		if (event.getResultCode() == Code.OK.intValue()) {
			this.session.confirmed(sent);
		}
		return event;
	}

	/**
	 * {@link #answer} to a request that creates a node: when the caller gets no answer in time or
	 * is interrupted, the node is deleted, {@code path} (its name, when known) at once and the
	 * created one also once the answer comes, so that a late create leaves no node behind.
	 */
	CuratorEvent answerOrDelete(CompletableFuture<CuratorEvent> answer, long sent, long deadline, String operation,
			String key, @Nullable String path) throws InterruptedException {
		try {
			return answer(answer, sent, deadline, operation, key);
		}
		catch (RuntimeException | InterruptedException ex) {
			if (path != null) {
				deleteInBackground(path);
			}
			answer.thenAccept((late) -> {
				if (late.getResultCode() == Code.OK.intValue()) {
					deleteInBackground((path != null) ? path : late.getName());
				}
			});
			throw ex;
		}
	}

	/** {@link #await}, for callers that report interruption as {@link LockInterruptedException}. */
	<T> T awaitUninterruptibly(CompletableFuture<T> answer, long sent, long deadline, String operation, String key) {
		try {
			return await(answer, sent, deadline, operation, key);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(key, ex);
		}
	}

	LockBackendException failure(String operation, String key, Exception ex) {
		return new LockBackendException(
				"The zookeeper backend failed to " + operation + " lock '" + key + "': " + ex.getMessage(), ex);
	}

	/** The failure that an answer's result code tells. */
	LockBackendException failure(String operation, String key, CuratorEvent event) {
		return failure(operation, key, KeeperException.create(Code.get(event.getResultCode()), event.getPath()));
	}

	/**
	 * Waits for an answer until {@code deadline}; a request that the connected server left
	 * unanswered for a whole connection timeout drops the connection ({@link ZooKeeperSession#unanswered}).
	 */
	<T> T await(CompletableFuture<T> answer, long sent, long deadline, String operation, String key)
			throws InterruptedException {
		try {
			return answer.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
		}
		catch (ExecutionException ex) {
			throw failure(operation, key, (ex.getCause() instanceof Exception cause) ? cause : ex);
		}
		catch (TimeoutException ex) {
			this.session.unanswered(sent, "a request to " + operation + " a lock");
			throw new LockBackendException("The zookeeper backend failed to " + operation + " lock '" + key
					+ "': no answer within " + TimeUnit.NANOSECONDS.toMillis(deadline - sent) + " ms", ex);
		}
	}

	/**
	 * One request sent in the background, with the callback that takes its answer; returns what
	 * Curator's {@code forPath} returns in the background (nothing of use).
	 */
	@FunctionalInterface
	interface Request {

		@Nullable Object send(BackgroundCallback callback) throws Exception;

	}

}
