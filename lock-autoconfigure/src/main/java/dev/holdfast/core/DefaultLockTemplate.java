package dev.holdfast.core;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

import io.micrometer.observation.Observation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.AsyncLockTemplate;
import dev.holdfast.Lease;
import dev.holdfast.LeaseInfo;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockInterruptedException;
import dev.holdfast.LockListener.LockObservation;
import dev.holdfast.LockListener;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.SessionLeases;
import dev.holdfast.spi.WaiterHandoff;

/**
 * The locking engine: turns one {@link LockBackend} into a {@link LockTemplate}.
 * <ul>
 * <li><b>Reentrancy</b>: a thread that holds a lock and asks for it again gets a new hold on the
 * same backend lock, without a round trip; the lock is released when the last hold closes.</li>
 * <li><b>One racer per key</b>: within this template, threads that want the same key queue on a
 * local fair semaphore, and only the one at its head talks to the backend. Other instances see at
 * most one contender per key per process.</li>
 * <li><b>Waiting</b>: the racer retries after a release event (when the backend sends them) or
 * after a jittered pause that grows to {@link LockSettings#pollInterval()}, never longer than the
 * holder's remaining time to live nor the caller's remaining wait time. Interruption ends the wait
 * at once and leaves no lease behind.</li>
 * <li><b>Renewal</b>: leases are renewed by one scheduler thread, all due leases in one backend
 * call. A lease that fails to renew is marked lost: {@link Lease#isValid()} turns false and a
 * WARN is logged.</li>
 * <li><b>Queues and sessions</b>: a backend with a {@link dev.holdfast.spi.WaitQueue} of its own
 * gets the whole wait of the racer instead of retries; a backend with {@link SessionLeases} makes
 * every lease not valid while it is suspended, and marks leases lost when it reports them
 * lost.</li>
 * </ul>
 * Local state is bounded: the per-key maps hold entries only while a thread holds, waits for or
 * races for that key.
 * <p>
 * With an {@link AsyncLockBackend} the template also acquires without blocking
 * ({@link #tryAcquireAsync}), for reactive callers; such leases are bound to no thread.
 */
public class DefaultLockTemplate implements AsyncLockTemplate, LockEngine, AutoCloseable {

	private static final Log logger = LogFactory.getLog(DefaultLockTemplate.class);

	private final LockBackend backend;

	private final LockSettings settings;

	private final LockKeys keys;

	private final LockListener listener;

	private final OwnerTokens owners = new OwnerTokens();

	private final @Nullable LeaseRenewer renewer;

	private final @Nullable AsyncLockSupport async;

	private final Racer racer;

	private final @Nullable SessionLeases sessions;

	private final @Nullable AutoCloseable lostSubscription;

	private final UnknownOutcomeReleases unknownOutcomes;

	private final LeaseReleases releases;

	/** How long {@link #close()} waits for releases in flight. */
	private static final Duration CLOSE_WAITS_FOR_RELEASES = Duration.ofSeconds(5);

	/** Leases held by this template, by key: one per key at most. */
	private final ConcurrentHashMap<String, HeldLease> held = new ConcurrentHashMap<>();

	/** Locks taken without this template but listed with its leases, while their holders run. */
	private final Set<Supplier<LeaseInfo>> listed = ConcurrentHashMap.newKeySet();

	private volatile DriftAllowance lastDrift = new DriftAllowance(Duration.ZERO, 0);

	private volatile boolean closed;

	private volatile boolean draining;

	public DefaultLockTemplate(LockBackend backend, LockSettings settings) {
		this(backend, settings, LockListener.NONE);
	}

	public DefaultLockTemplate(LockBackend backend, LockSettings settings, LockListener listener) {
		this.backend = backend;
		this.settings = settings;
		this.keys = new LockKeys(settings.keyPrefix(), settings.maxKeyLength());
		this.listener = GuardedLockListener.of(listener);
		this.renewer = (backend instanceof LeaseRenewal renewal)
				? new LeaseRenewer(this, renewal, backend.name(), this.held.values()) : null;
		HandoffWaiters handoff = (backend instanceof WaiterHandoff waiterHandoff)
				? new HandoffWaiters(waiterHandoff, this.owners, settings.pollInterval(), this::clockDriftNanos) : null;
		this.async = (backend instanceof AsyncLockBackend asyncBackend) ? new AsyncLockSupport(this, asyncBackend,
				this.listener, this.owners, settings.pollInterval(), handoff) : null;
		this.racer = new Racer(this, backend, this.owners, settings.pollInterval(), this.async, handoff);
		this.sessions = (backend instanceof SessionLeases sessionLeases) ? sessionLeases : null;
		this.lostSubscription = (this.sessions != null) ? this.sessions.onLost(this::lostOnBackend) : null;
		this.unknownOutcomes = new UnknownOutcomeReleases(backend);
		this.releases = new LeaseReleases(this, backend, settings.releaseInBackground(), this.listener, this.held,
				handoff);
	}

	@Override
	public <T extends @Nullable Object, E extends Exception> T executeLocked(String name, @Nullable Object key,
			LockOptions options, LockedAction<T, E> action) throws E {
		try (Lease lease = acquire(name, key, options); Observation.Scope scope = EngineLease.observationOf(lease).openScope()) {
			return action.run();
		}
	}

	@Override
	public <T, E extends Exception> Optional<T> tryExecuteLocked(String name, @Nullable Object key,
			LockOptions options, LockedAction<T, E> action) throws E {
		Optional<Lease> lease = tryAcquire(name, key, options);
		if (lease.isEmpty()) {
			return Optional.empty();
		}
		try (Lease held = lease.get(); Observation.Scope scope = EngineLease.observationOf(held).openScope()) {
			return Optional.ofNullable(action.run());
		}
	}

	@Override
	public Optional<Lease> tryAcquire(String name, @Nullable Object key, LockOptions options) {
		return Optional.ofNullable(acquireOrNull(name, key, options));
	}

	@Override
	public Lease acquire(String name, @Nullable Object key, LockOptions options) {
		Lease lease = acquireOrNull(name, key, options);
		if (lease == null) {
			String fullKey = keyFor(name, key);
			throw new LockNotAcquiredException(fullKey, shownKey(fullKey), waitTime(options));
		}
		return lease;
	}

	/**
	 * Acquires a lock, or returns {@code null} if it stayed held for the wait time.
	 * @throws LockBackendException if the backend failed
	 * @throws LockInterruptedException if the thread was interrupted while waiting or during a backend
	 * call
	 */
	public @Nullable Lease acquireOrNull(String name, @Nullable Object key, LockOptions options) {
		return acquireKey(name, keyFor(name, key), options);
	}

	/** The backend key of a lock, as {@link LockKeys} encodes it. */
	@Override
	public String keyFor(String name, @Nullable Object key) {
		return this.keys.encode(name, key);
	}

	/** The leases this template holds now, and the locks {@linkplain #listHeld listed} with them. */
	@Override
	public List<LeaseInfo> heldLeases() {
		List<LeaseInfo> leases = new ArrayList<>();
		for (HeldLease lease : this.held.values()) {
			if (lease.isReleased()) {
				// Released by its holder; only the backend's answer is outstanding.
				continue;
			}
			leases.add(new LeaseInfo(lease.name(), lease.key(), lease.fencingToken(), lease.acquiredAt(),
					lease.expiresAt(), lease.isValid()));
		}
		for (Supplier<LeaseInfo> lock : this.listed) {
			leases.add(lock.get());
		}
		return leases;
	}

	/** Also seen by the graceful shutdown, which waits for listed locks too. */
	@Override
	public Runnable listHeld(Supplier<LeaseInfo> lock) {
		this.listed.add(lock);
		return () -> this.listed.remove(lock);
	}

	/** The backend this template uses. */
	@Override
	public LockBackend backend() {
		return this.backend;
	}

	@Override
	public String backendName() {
		return this.backend.name();
	}

	@Override
	public String keyPrefix() {
		return this.settings.keyPrefix();
	}

	@Override
	public Clock clock() {
		return this.settings.clock();
	}

	/** The defaults this template applies. */
	public LockSettings settings() {
		return this.settings;
	}

	@Override
	public boolean supportsNonBlocking() {
		return this.async != null;
	}

	@Override
	public CompletableFuture<@Nullable Lease> tryAcquireAsync(String name, @Nullable Object key,
			LockOptions options) {
		AsyncLockSupport support = this.async;
		if (support == null) {
			throw new UnsupportedOperationException(
					"The " + this.backend.name() + " backend cannot acquire without blocking");
		}
		String fullKey;
		try {
			fullKey = keyFor(name, key);
		}
		catch (RuntimeException ex) {
			return CompletableFuture.failedFuture(ex);
		}
		if (this.closed) {
			return CompletableFuture.failedFuture(
					new LockBackendException("Holdfast is shut down: lock '" + shownKey(fullKey) + "' was not acquired",
							null));
		}
		if (this.draining) {
			return CompletableFuture.failedFuture(new LockBackendException(
					"Holdfast is shutting down: lock '" + shownKey(fullKey) + "' was not acquired", null));
		}
		Duration ttl = (options.getLeaseTime() != null) ? options.getLeaseTime() : this.settings.leaseTime();
		return support.tryAcquire(name, fullKey, waitTime(options), ttl, options.isRenew());
	}

	@Override
	public CompletionStage<Void> releaseAsync(Lease lease) {
		if (lease instanceof LeaseHandle handle) {
			return handle.closeAsync();
		}
		lease.close();
		return CompletableFuture.completedFuture(null);
	}

	private @Nullable Lease acquireKey(String name, String key, LockOptions options) {
		if (this.closed) {
			throw new LockBackendException("Holdfast is shut down: lock '" + shownKey(key) + "' was not acquired",
					null);
		}
		HeldLease current = this.held.get(key);
		if (current != null && current.isHeldBy(Thread.currentThread()) && current.enterReentrant()) {
			return new LeaseHandle(current);
		}
		if (this.draining) {
			throw new LockBackendException("Holdfast is shutting down: lock '" + shownKey(key) + "' was not acquired",
					null);
		}
		Duration wait = waitTime(options);
		Duration ttl = (options.getLeaseTime() != null) ? options.getLeaseTime() : this.settings.leaseTime();
		long start = System.nanoTime();
		long deadline = start + wait.toNanos();
		LockObservation observation = this.listener.acquiring(name, key, this.backend.name());
		Racer.Gate gate = this.racer.enterGate(key);
		try {
			// Whoever cannot enter the gate in time (a try-once caller while a local peer races or
			// waits) still makes its one attempt on the backend: failing locally would make a busy
			// tryAcquire loop spin without ever asking the backend whether the lock is free.
			boolean gated = gate.tryEnter(Math.max(0, deadline - System.nanoTime()));
			try {
				HeldLease lease = this.racer.race(name, key, ttl, options.isRenew(), gated ? deadline : System.nanoTime(),
						observation);
				if (lease != null && gated) {
					this.racer.tookWithQueue(key, ttl, gate);
				}
				if (lease == null) {
					observation.notAcquired();
					this.listener.notAcquired(name, this.backend.name(), Duration.ofNanos(System.nanoTime() - start));
					return null;
				}
				if (this.listener != LockListener.NONE) {
					this.listener.acquired(name, this.backend.name(), Duration.ofNanos(System.nanoTime() - start));
				}
				return new LeaseHandle(lease);
			}
			finally {
				if (gated) {
					gate.exit();
				}
			}
		}
		catch (InterruptedException ex) {
			observation.cancelled();
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(shownKey(key), ex);
		}
		catch (LockBackendException ex) {
			observation.failed(ex);
			this.listener.failed(name, this.backend.name(), Duration.ofNanos(System.nanoTime() - start), ex);
			throw ex;
		}
		catch (RuntimeException | Error ex) {
			observation.failed(ex);
			throw ex;
		}
		finally {
			this.racer.leaveGate(key, gate);
		}
	}

	/** Registers a lease acquired by the non-blocking path: bound to no thread. */
	LeaseHandle registerDetached(String name, String key, String owner, long token, Duration ttl, boolean renew,
			long attemptStart, LockObservation observation) {
		LeaseHandle handle = new LeaseHandle(register(name, key, owner, token, ttl, renew, attemptStart, observation));
		handle.detachFromThread();
		return handle;
	}

	HeldLease register(String name, String key, String owner, long token, Duration ttl, boolean renew,
			long attemptStart, LockObservation observation) {
		// The hold starts before the lease can be lost or released.
		observation.acquired(token);
		HeldLease lease = new HeldLease(this, name, key, owner, token, ttl, renew, attemptStart, now(), observation);
		HeldLease previous = this.held.put(key, lease);
		if (previous != null && previous.isActive()) {
			// The backend gave the lock to us, so the previous holder's lease has expired there.
			lost(previous, "its lock expired on the backend and was acquired again");
		}
		if (renew && this.renewer != null) {
			this.renewer.add(lease);
		}
		return lease;
	}

	boolean extend(HeldLease lease, Duration ttl) {
		if (!(this.backend instanceof LeaseRenewal renewal)) {
			throw new UnsupportedOperationException("The " + this.backend.name() + " backend cannot extend leases");
		}
		if (ttl.isNegative() || ttl.isZero()) {
			throw new IllegalArgumentException("ttl must be positive, was " + ttl);
		}
		if (!lease.isActive()) {
			return false;
		}
		// Never beside a renewal of this lease: the backend could apply the older request last.
		ReentrantLock timeToLive = lease.timeToLiveLock();
		try {
			timeToLive.lockInterruptibly();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(shownKey(lease.key()), ex);
		}
		try {
			if (!lease.isActive()) {
				return false;
			}
			long start = System.nanoTime();
			Set<String> renewed = call(() -> renewal.renew(List.of(new HeldLock(lease.key(), lease.owner(), ttl))),
					"extend", lease.key());
			if (renewed.contains(lease.key())) {
				lease.confirmed(start, ttl);
				return true;
			}
		}
		finally {
			timeToLive.unlock();
		}
		lost(lease, "it was not held by its owner any more when extended");
		return false;
	}

	void release(HeldLease lease, boolean onBackend) {
		if (onBackend) {
			this.releases.release(lease);
		}
		else {
			this.releases.releaseNow(lease, false);
		}
	}

	/** Like {@link #release(HeldLease, boolean)}, without blocking when the backend is non-blocking. */
	CompletionStage<Void> releaseAsync(HeldLease lease) {
		return this.releases.releaseAsync(lease);
	}

	/** This process's release of {@code key} in flight before an attempt ({@link LeaseReleases#releaseBeforeAttempt}). */
	@Nullable HeldLease releaseBeforeAttempt(String key) {
		return this.releases.releaseBeforeAttempt(key);
	}

	/**
	 * After an attempt found {@code key} held: waits for this process's own release of it if one
	 * was in flight when the attempt was sent or is now ({@link LeaseReleases#awaitOwnRelease});
	 * true when the caller may try again.
	 */
	boolean awaitOwnRelease(String key, @Nullable HeldLease before) throws InterruptedException {
		return this.releases.awaitOwnRelease(key, before);
	}

	/** This process's release of {@code key} in flight before the attempt or now, or {@code null}. */
	@Nullable CompletableFuture<Void> ownRelease(String key, @Nullable HeldLease before) {
		return this.releases.ownRelease(key, before);
	}

	/**
	 * Releases sent in the background whose answer from the backend is outstanding; a graceful
	 * shutdown waits for them as for held leases.
	 */
	public int releasesInFlight() {
		return this.releases.inFlight();
	}

	/**
	 * The backend answered the release of {@code lease} (or it failed, or was not sent): wakes this
	 * template's racer for its key, which does not race while the key is held or being released
	 * here; on a backend that hands released locks to recorded waiters, only if the release did
	 * not hand the lock on ({@code handedOn} false: failed, answer lost, not held any more): the
	 * grant wakes the waiter it went to.
	 */
	void releasedLocally(HeldLease lease, boolean announced, boolean handedOn) {
		this.racer.onLocalRelease(lease.key(), announced, handedOn);
	}

	/**
	 * Whether a racer of this template waits for {@code key}, which this template is about to
	 * release with an announcement: that racer then waits for the announcement, not for the
	 * release's answer.
	 */
	boolean awaitAnnouncement(String key) {
		return this.racer.awaitAnnouncement(key);
	}

	/** Whether a thread of this template queues or races for {@code key} now. */
	boolean wantedLocally(String key) {
		return this.racer.wanted(key);
	}

	/**
	 * How long this template still holds {@code key} for sure, in nanoseconds, counting a release
	 * in flight as held: {@code 0} when neither a valid lease nor a release of this template is.
	 * A released lease leaves the map of held leases when the backend answered its release.
	 */
	long localHoldNanos(String key) {
		HeldLease lease = this.held.get(key);
		return (lease != null && (lease.isValid() || lease.isReleased())) ? lease.untilExpiryNanos() : 0;
	}

	/**
	 * How long this template's lease of {@code key} is still valid, in nanoseconds; {@code 0}
	 * when there is none or it is no longer valid (released, releasing, lost).
	 */
	long validHoldNanos(String key) {
		HeldLease lease = this.held.get(key);
		return (lease != null && lease.isValid()) ? lease.untilExpiryNanos() : 0;
	}

	/**
	 * The backend's {@linkplain LockBackend#clockDriftAllowance drift allowance} for {@code ttl}, in
	 * nanoseconds; the last one is kept, as applications use one or a few times to live.
	 */
	long clockDriftNanos(Duration ttl) {
		DriftAllowance last = this.lastDrift;
		if (!last.ttl().equals(ttl)) {
			last = new DriftAllowance(ttl, this.backend.clockDriftAllowance(ttl).toNanos());
			this.lastDrift = last;
		}
		return last.nanos();
	}

	private record DriftAllowance(Duration ttl, long nanos) {
	}

	/** Logs a failed release at WARN; returns the failure as callers would see it (key masked). */
	LockBackendException releaseFailed(HeldLease lease, Throwable ex) {
		Throwable cause = (ex instanceof CompletionException && ex.getCause() != null) ? ex.getCause() : ex;
		LockBackendException failure = backendFailure(cause, "release", lease.key());
		logger.warn("Holdfast could not release lock '" + shownKey(lease.key()) + "'; it expires on the backend within "
				+ lease.ttl(), failure);
		return failure;
	}

	void lost(HeldLease lease, String reason) {
		if (lease.markLost()) {
			logger.warn("Holdfast lost lock '" + shownKey(lease.key()) + "' (fencing token " + lease.fencingToken()
					+ ") because " + reason
					+ ". Code that still runs under it is no longer exclusive; fencing tokens protect the resource.");
			lease.observation().lost();
			this.listener.leaseLost(lease.name(), this.backend.name());
			// A racer of this template that sent nothing while the lease was valid attempts now.
			this.racer.onLocalLoss(lease.key());
		}
	}

	/** The backend reported {@code owner}'s lock at {@code key} lost. */
	private void lostOnBackend(String key, String owner, String reason) {
		HeldLease lease = this.held.get(key);
		if (lease != null && lease.owner().equals(owner)) {
			lost(lease, reason);
		}
	}

	/** Whether the backend cannot vouch for any lease now ({@link SessionLeases#suspended()}). */
	boolean backendSuspended() {
		return this.sessions != null && this.sessions.suspended();
	}

	Instant now() {
		return this.settings.clock().instant();
	}

	/**
	 * Refuses new acquisitions from now on, for a graceful shutdown: they fail with a
	 * {@link LockBackendException} saying that Holdfast is shutting down. Leases already held
	 * stay held and renewed until released or {@link #close() closed}, and their threads can
	 * still enter them again (reentrancy).
	 */
	public void stopAcquiring() {
		this.draining = true;
	}

	/**
	 * Takes new acquisitions again after {@link #stopAcquiring()}, for an application context
	 * that is started again after a stop. Has no effect once {@link #close() closed}.
	 */
	public void resumeAcquiring() {
		this.draining = false;
	}

	/**
	 * Waits (at most 5 s) for releases sent in the background to be answered, stops renewals and
	 * closes the release subscription; later acquisitions fail with
	 * {@link LockBackendException}. A lease still held at this point belongs to code that still
	 * runs (a graceful shutdown waited for the others): it is marked lost (WARN, a lost-lease
	 * event) and left to expire on the backend after its time to live, so that no other instance
	 * takes the lock while that code may still write. Closing such a lease later releases it,
	 * owner-checked, if the backend is still reachable.
	 */
	@Override
	public void close() {
		this.closed = true;
		try {
			if (!this.releases.awaitInFlight(CLOSE_WAITS_FOR_RELEASES)) {
				logger.warn("Holdfast closes with " + this.releases.inFlight() + " release(s) not answered by the "
						+ this.backend.name() + " backend after " + CLOSE_WAITS_FOR_RELEASES.toSeconds()
						+ "s; those locks expire on the backend within their time to live");
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		if (this.renewer != null) {
			this.renewer.shutdown();
		}
		for (HeldLease lease : new ArrayList<>(this.held.values())) {
			if (lease.isReleased()) {
				continue;
			}
			lost(lease, "the application shut down while it was still in use "
					+ "(spring.lifecycle.timeout-per-shutdown-phase ran out before its method returned); "
					+ "it is no longer renewed and expires on the backend within " + lease.ttl());
			this.held.remove(lease.key(), lease);
		}
		this.racer.close();
		if (this.lostSubscription != null) {
			try {
				this.lostSubscription.close();
			}
			catch (Exception ex) {
				logger.debug("Could not close the lost-lease subscription", ex);
			}
		}
		this.unknownOutcomes.shutdown();
	}

	/**
	 * Opens now what the first contended acquisition would otherwise open: the backend's release
	 * subscription (in the background, as the backend opens it). Called when the application
	 * starts; see {@link #releaseEventsListening()}.
	 */
	public void prepare() {
		if (this.backend instanceof ReleaseEvents events && events.announcesReleases()) {
			subscribed();
		}
	}

	/**
	 * Whether release events reach this template's waiters now: true for a backend without them
	 * (its waiters poll), else once the subscription listens.
	 */
	public boolean releaseEventsListening() {
		return !(this.backend instanceof ReleaseEvents events) || !events.announcesReleases()
				|| (this.racer.hasSubscription() && events.isListening());
	}

	/**
	 * Closes the release subscription that {@link #prepare()} or a contended acquisition opened,
	 * while the backend's connections are still open (when the application context stops);
	 * waiters poll until a later acquisition or {@code prepare()} opens it again.
	 */
	public void closeReleaseEvents() {
		this.racer.close();
	}

	/** {@code key} as logs and messages show it: see {@link LockSettings#showKeyValues()}. */
	@Override
	public String shownKey(String key) {
		return this.settings.shown(key);
	}

	@Override
	public Duration waitTime(LockOptions options) {
		return (options.getWaitTime() != null) ? options.getWaitTime() : this.settings.waitTime();
	}

	/** Whether {@link #close()} was called. */
	boolean isClosed() {
		return this.closed;
	}

	/** Whether release events reach this template now; subscribes on first use. */
	boolean subscribed() {
		return this.racer.subscribed();
	}

	/**
	 * After an acquisition attempt with {@code owner} failed: releases the lock in the background,
	 * owner-checked, in case the backend took it all the same (see {@link UnknownOutcomeReleases}).
	 */
	void releaseUnknownOutcome(String key, String owner) {
		this.unknownOutcomes.release(key, owner);
	}

	<T> T call(Supplier<T> operation, String what, String key) {
		try {
			return operation.get();
		}
		catch (RuntimeException ex) {
			throw backendFailure(ex, what, key);
		}
	}

	/**
	 * The exception a caller gets for a backend failure: a {@link LockBackendException} whose
	 * message shows {@code key} as {@link #shownKey} does, also where the backend's message quoted it.
	 */
	LockBackendException backendFailure(Throwable ex, String what, String key) {
		String shownKey = shownKey(key);
		if (ex instanceof LockBackendException backendException) {
			String message = String.valueOf(backendException.getMessage());
			if (shownKey.equals(key) || !message.contains(key)) {
				return backendException;
			}
			LockBackendException masked = new LockBackendException(message.replace(key, shownKey),
					backendException.getCause());
			masked.setStackTrace(backendException.getStackTrace());
			return masked;
		}
		String message = String.valueOf(ex.getMessage()).replace(key, shownKey);
		return new LockBackendException(
				"The " + this.backend.name() + " backend failed to " + what + " lock '" + shownKey + "': " + message,
				ex);
	}

}
