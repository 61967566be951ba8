package dev.holdfast.core;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

import io.micrometer.observation.Observation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockInterruptedException;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.core.LockListener.LockObservation;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;

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
 * </ul>
 * Local state is bounded: the per-key maps hold entries only while a thread holds, waits for or
 * races for that key.
 * <p>
 * With an {@link AsyncLockBackend} the template also acquires without blocking
 * ({@link #tryAcquireAsync}), for reactive callers; such leases are bound to no thread.
 */
public class DefaultLockTemplate implements AsyncLockTemplate, AutoCloseable {

	private static final Log logger = LogFactory.getLog(DefaultLockTemplate.class);

	private static final long MIN_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(5);

	private final LockBackend backend;

	private final LockSettings settings;

	private final LockKeys keys;

	private final LockListener listener;

	private final OwnerTokens owners = new OwnerTokens();

	private final @Nullable LeaseRenewer renewer;

	private final @Nullable AsyncLockSupport async;

	/** Leases held by this template, by key: one per key at most. */
	private final ConcurrentHashMap<String, HeldLease> held = new ConcurrentHashMap<>();

	/** Locks taken without this template but listed with its leases, while their holders run. */
	private final Set<Supplier<LeaseInfo>> listed = ConcurrentHashMap.newKeySet();

	/** Local queues of threads that want a key, by key. */
	private final ConcurrentHashMap<String, Gate> gates = new ConcurrentHashMap<>();

	/** The racer waiting for a release event, by key. */
	private final ConcurrentHashMap<String, Semaphore> waiters = new ConcurrentHashMap<>();

	private final ReentrantLock subscribeLock = new ReentrantLock();

	private volatile @Nullable AutoCloseable subscription;

	private volatile long subscribeRetryAtNanos;

	private volatile boolean closed;

	private volatile boolean draining;

	public DefaultLockTemplate(LockBackend backend, LockSettings settings) {
		this(backend, settings, LockListener.NONE);
	}

	public DefaultLockTemplate(LockBackend backend, LockSettings settings, LockListener listener) {
		this.backend = backend;
		this.settings = settings;
		this.keys = new LockKeys(settings.keyPrefix(), settings.maxKeyLength());
		this.listener = listener;
		this.renewer = (backend instanceof LeaseRenewal renewal) ? new LeaseRenewer(this, renewal, backend.name())
				: null;
		this.async = (backend instanceof AsyncLockBackend asyncBackend)
				? new AsyncLockSupport(this, asyncBackend, listener, this.owners, settings.pollInterval()) : null;
	}

	@Override
	public <T extends @Nullable Object, E extends Exception> T executeLocked(String name, @Nullable Object key,
			LockOptions options, LockedAction<T, E> action) throws E {
		try (Lease lease = acquire(name, key, options); Observation.Scope scope = observation(lease).openScope()) {
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
		try (Lease held = lease.get(); Observation.Scope scope = observation(held).openScope()) {
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
			throw new LockNotAcquiredException(keyFor(name, key), waitTime(options));
		}
		return lease;
	}

	/**
	 * Acquires a lock, or returns {@code null} if it stayed held for the wait time.
	 * @throws LockBackendException if the backend failed
	 * @throws LockInterruptedException if the thread was interrupted while waiting
	 */
	public @Nullable Lease acquireOrNull(String name, @Nullable Object key, LockOptions options) {
		return acquireKey(name, keyFor(name, key), options);
	}

	/** The backend key of a lock, as {@link LockKeys} encodes it. */
	@Override
	public String keyFor(String name, @Nullable Object key) {
		return this.keys.encode(name, key);
	}

	/**
	 * The leases this template holds now, and the locks {@linkplain #listHeld listed} with them,
	 * for operators.
	 */
	public List<LeaseInfo> heldLeases() {
		List<LeaseInfo> leases = new ArrayList<>();
		for (HeldLease lease : this.held.values()) {
			leases.add(new LeaseInfo(lease.name(), lease.key(), lease.fencingToken(), lease.acquiredAt(),
					lease.expiresAt(), lease.isValid()));
		}
		for (Supplier<LeaseInfo> lock : this.listed) {
			leases.add(lock.get());
		}
		return leases;
	}

	/**
	 * Lists a lock that this process took on the template's backend without the template (a
	 * scheduled job's lock) among the {@link #heldLeases()}, so that operators and the graceful
	 * shutdown see it, until the returned action runs.
	 * @param lock describes the lock each time the leases are listed
	 * @return the action that removes the lock from the list
	 */
	public Runnable listHeld(Supplier<LeaseInfo> lock) {
		this.listed.add(lock);
		return () -> this.listed.remove(lock);
	}

	/** The backend this template uses. */
	public LockBackend backend() {
		return this.backend;
	}

	/** The defaults this template applies. */
	public LockSettings settings() {
		return this.settings;
	}

	/**
	 * Ends reentrancy of {@code lease} on the thread that acquired it: for leases that outlive the
	 * method that took them (a returned future or publisher). Later calls on that thread race for
	 * the lock like any other.
	 */
	public static void detachFromThread(Lease lease) {
		if (lease instanceof LeaseHandle handle) {
			handle.detachFromThread();
		}
	}

	/**
	 * The observation of {@code lease}'s acquisition and hold, as the template's
	 * {@link LockListener} returned it: {@link LockObservation#NONE} for leases of other
	 * templates or when nothing observes.
	 */
	public static LockObservation observation(Lease lease) {
		return (lease instanceof LeaseHandle handle) ? handle.lease().observation() : LockObservation.NONE;
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
					new LockBackendException("Holdfast is shut down: lock '" + fullKey + "' was not acquired", null));
		}
		if (this.draining) {
			return CompletableFuture.failedFuture(new LockBackendException(
					"Holdfast is shutting down: lock '" + fullKey + "' was not acquired", null));
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
			throw new LockBackendException("Holdfast is shut down: lock '" + key + "' was not acquired", null);
		}
		HeldLease current = this.held.get(key);
		if (current != null && current.isHeldBy(Thread.currentThread()) && current.enterReentrant()) {
			return new LeaseHandle(current);
		}
		if (this.draining) {
			throw new LockBackendException("Holdfast is shutting down: lock '" + key + "' was not acquired", null);
		}
		Duration wait = waitTime(options);
		Duration ttl = (options.getLeaseTime() != null) ? options.getLeaseTime() : this.settings.leaseTime();
		long start = System.nanoTime();
		long deadline = start + wait.toNanos();
		LockObservation observation = this.listener.acquiring(name, key, this.backend.name());
		Gate gate = enterGate(key);
		try {
			if (!gate.permit.tryAcquire(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
				observation.notAcquired();
				this.listener.notAcquired(name, this.backend.name(), Duration.ofNanos(System.nanoTime() - start));
				return null;
			}
			try {
				HeldLease lease = race(name, key, ttl, options.isRenew(), deadline, observation);
				Duration waited = Duration.ofNanos(System.nanoTime() - start);
				if (lease == null) {
					observation.notAcquired();
					this.listener.notAcquired(name, this.backend.name(), waited);
					return null;
				}
				this.listener.acquired(name, this.backend.name(), waited);
				return new LeaseHandle(lease);
			}
			finally {
				gate.permit.release();
			}
		}
		catch (InterruptedException ex) {
			observation.cancelled();
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(key, ex);
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
			leaveGate(key);
		}
	}

	private @Nullable HeldLease race(String name, String key, Duration ttl, boolean renew, long deadline,
			LockObservation observation) throws InterruptedException {
		boolean notifying = this.backend instanceof ReleaseEvents;
		long pollNanos = this.settings.pollInterval().toNanos();
		long pause = notifying ? pollNanos : Math.min(MIN_PAUSE_NANOS, pollNanos);
		Semaphore signal = null;
		try {
			while (true) {
				if (Thread.interrupted()) {
					throw new InterruptedException();
				}
				String owner = this.owners.next();
				long attemptStart = System.nanoTime();
				AcquireResult result = call(() -> this.backend.tryAcquire(key, owner, ttl), "acquire", key);
				if (result.acquired()) {
					return register(name, key, owner, result.fencingToken(), ttl, renew, attemptStart, observation);
				}
				long remaining = deadline - System.nanoTime();
				if (remaining <= 0) {
					return null;
				}
				if (notifying && signal == null && subscribed()) {
					// Listen before the next attempt, so that a release between the two is not missed.
					signal = new Semaphore(0);
					this.waiters.put(key, signal);
					continue;
				}
				long sleep = Math.min(remaining, jitter(pause));
				if (result.holderRemainingMillis() >= 0) {
					sleep = Math.min(sleep, TimeUnit.MILLISECONDS.toNanos(result.holderRemainingMillis() + 1));
				}
				if (signal != null) {
					if (signal.tryAcquire(sleep, TimeUnit.NANOSECONDS)) {
						signal.drainPermits();
					}
				}
				else {
					TimeUnit.NANOSECONDS.sleep(sleep);
				}
				pause = Math.min(pause * 2, pollNanos);
			}
		}
		finally {
			if (signal != null) {
				this.waiters.remove(key, signal);
			}
		}
	}

	/** Registers a lease acquired by the non-blocking path: bound to no thread. */
	LeaseHandle registerDetached(String name, String key, String owner, long token, Duration ttl, boolean renew,
			long attemptStart, LockObservation observation) {
		LeaseHandle handle = new LeaseHandle(register(name, key, owner, token, ttl, renew, attemptStart, observation));
		handle.detachFromThread();
		return handle;
	}

	private HeldLease register(String name, String key, String owner, long token, Duration ttl, boolean renew,
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
		long start = System.nanoTime();
		Set<String> renewed = call(() -> renewal.renew(List.of(new HeldLock(lease.key(), lease.owner(), ttl))),
				"extend", lease.key());
		if (renewed.contains(lease.key())) {
			lease.confirmed(start, ttl);
			return true;
		}
		lost(lease, "it was not held by its owner any more when extended");
		return false;
	}

	void release(HeldLease lease) {
		if (!unregister(lease)) {
			return;
		}
		try {
			this.backend.release(lease.key(), lease.owner());
		}
		catch (RuntimeException ex) {
			releaseFailed(lease, ex);
		}
		lease.observation().released();
		this.listener.released(lease.name(), this.backend.name(), lease.heldFor());
	}

	/** Like {@link #release(HeldLease)}, without blocking when the backend is non-blocking. */
	CompletionStage<Void> releaseAsync(HeldLease lease) {
		if (!(this.backend instanceof AsyncLockBackend asyncBackend)) {
			release(lease);
			return CompletableFuture.completedFuture(null);
		}
		if (!unregister(lease)) {
			return CompletableFuture.completedFuture(null);
		}
		CompletionStage<Boolean> answer;
		try {
			answer = asyncBackend.releaseAsync(lease.key(), lease.owner());
		}
		catch (RuntimeException ex) {
			answer = CompletableFuture.failedFuture(ex);
		}
		return answer.handle((released, ex) -> {
			if (ex != null) {
				releaseFailed(lease, ex);
			}
			lease.observation().released();
			this.listener.released(lease.name(), this.backend.name(), lease.heldFor());
			return null;
		});
	}

	private boolean unregister(HeldLease lease) {
		if (!lease.markReleased()) {
			return false;
		}
		this.held.remove(lease.key(), lease);
		if (this.renewer != null) {
			this.renewer.remove(lease);
		}
		return true;
	}

	private void releaseFailed(HeldLease lease, Throwable ex) {
		logger.warn("Holdfast could not release lock '" + lease.key() + "'; it expires on the backend within "
				+ lease.ttl(), ex);
	}

	void lost(HeldLease lease, String reason) {
		if (lease.markLost()) {
			if (this.renewer != null) {
				this.renewer.remove(lease);
			}
			logger.warn("Holdfast lost lock '" + lease.key() + "' (fencing token " + lease.fencingToken() + ") because "
					+ reason + ". Code that still runs under it is no longer exclusive; fencing tokens protect the resource.");
			lease.observation().lost();
			this.listener.leaseLost(lease.name(), this.backend.name());
		}
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
	 * Stops renewals and releases every lease this template holds, with owner checks. Later
	 * acquisitions fail with {@link LockBackendException}.
	 */
	@Override
	public void close() {
		this.closed = true;
		if (this.renewer != null) {
			this.renewer.shutdown();
		}
		Collection<HeldLease> leases = new ArrayList<>(this.held.values());
		for (HeldLease lease : leases) {
			release(lease);
		}
		AutoCloseable current = this.subscription;
		if (current != null) {
			try {
				current.close();
			}
			catch (Exception ex) {
				logger.debug("Could not close the release subscription", ex);
			}
		}
	}

	@Override
	public Duration waitTime(LockOptions options) {
		return (options.getWaitTime() != null) ? options.getWaitTime() : this.settings.waitTime();
	}

	/** Whether release events reach this template now; subscribes on first use. */
	boolean subscribed() {
		if (this.subscription != null) {
			return true;
		}
		if (System.nanoTime() - this.subscribeRetryAtNanos < 0) {
			return false;
		}
		this.subscribeLock.lock();
		try {
			if (this.subscription == null && !this.closed) {
				this.subscription = ((ReleaseEvents) this.backend).subscribe(this::onRelease);
			}
			return this.subscription != null;
		}
		catch (RuntimeException ex) {
			this.subscribeRetryAtNanos = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
			logger.warn("Holdfast could not subscribe to release events of the " + this.backend.name()
					+ " backend; waiters poll until it can", ex);
			return false;
		}
		finally {
			this.subscribeLock.unlock();
		}
	}

	private void onRelease(String key) {
		Semaphore signal = this.waiters.get(key);
		if (signal != null) {
			signal.release();
		}
		if (this.async != null) {
			this.async.onRelease(key);
		}
	}

	private Gate enterGate(String key) {
		return this.gates.compute(key, (k, gate) -> {
			Gate result = (gate != null) ? gate : new Gate();
			result.users++;
			return result;
		});
	}

	private void leaveGate(String key) {
		this.gates.computeIfPresent(key, (k, gate) -> (--gate.users == 0) ? null : gate);
	}

	private <T> T call(Supplier<T> operation, String what, String key) {
		try {
			return operation.get();
		}
		catch (LockBackendException ex) {
			throw ex;
		}
		catch (RuntimeException ex) {
			throw new LockBackendException("The " + this.backend.name() + " backend failed to " + what + " lock '" + key
					+ "': " + ex.getMessage(), ex);
		}
	}

	private static long jitter(long nanos) {
		return nanos / 2 + ThreadLocalRandom.current().nextLong(nanos / 2 + 1);
	}

	/** Threads of this process that want one key; users is guarded by the map's compute. */
	private static final class Gate {

		final Semaphore permit = new Semaphore(1, true);

		int users;

	}

}
