package dev.holdfast.core;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
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
import dev.holdfast.LockListener;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.SessionLeases;
import dev.holdfast.spi.SharedLocks;
import dev.holdfast.support.CompositeLockListener;

/**
 * The locking engine: turns one {@link LockBackend} into a {@link dev.holdfast.LockTemplate}
 * (its rules are ENG, ACQ and REL in docs/DESIGN.md).
 * <ul>
 * <li><b>Reentrancy</b>: a thread that holds a lock and asks for it again gets a new hold on the
 * same backend lock, without a round trip; the lock is released when the last hold closes.</li>
 * <li><b>Acquisition</b> ({@link Acquisitions}): waiting acquisitions of one key queue in a local
 * line whose head alone talks to the backend, woken by release events or jittered pauses.</li>
 * <li><b>Leases</b> ({@link LocalLeases}): held leases by key, their validity by the monotonic
 * clock, their loss; renewed by one scheduler thread, all due leases in one backend call.</li>
 * <li><b>Release</b> ({@link Releases}): owner-checked, in the background on a non-blocking
 * backend, failed ones retried in the background ({@link BackgroundCalls}).</li>
 * </ul>
 * With an {@link AsyncLockBackend} the template also acquires without blocking
 * ({@link #tryAcquireAsync}), for reactive callers; such leases are bound to no thread.
 */
public class DefaultLockTemplate implements AsyncLockTemplate, LockEngine, AutoCloseable {

	private static final Log logger = LogFactory.getLog(DefaultLockTemplate.class);

	/** How long {@link #close()} waits for releases and background calls in flight. */
	private static final Duration CLOSE_WAITS = Duration.ofSeconds(5);

	private final LockBackend backend;

	private final LockSettings settings;

	private final LockKeys keys;

	private final Failures failures;

	private final BackgroundCalls background;

	/** Package-private for tests of the lines. */
	final Lines lines;

	private final Releases releases;

	private final LocalLeases leases;

	private final Acquisitions acquisitions;

	private final AtOnceAcquisitions atOnce;

	private final @Nullable AutoCloseable lostSubscription;

	private volatile boolean closed;

	public DefaultLockTemplate(LockBackend backend, LockSettings settings) {
		this(backend, settings, LockListener.NONE);
	}

	public DefaultLockTemplate(LockBackend backend, LockSettings settings, LockListener listener) {
		LockListener guarded = CompositeLockListener.of(List.of(listener));
		this.backend = backend;
		this.settings = settings;
		this.keys = new LockKeys(settings.keyPrefix(), settings.maxKeyLength());
		this.failures = new Failures(backend.name(), settings);
		this.background = new BackgroundCalls(backend, this.failures);
		this.lines = new Lines(backend);
		this.releases = new Releases(backend, settings.releaseInBackground(), this.lines, this.background,
				this.failures, guarded);
		this.leases = new LocalLeases(backend, this.failures, guarded, settings.clock(), this.releases,
				new EngineThreads(backend.name()));
		this.acquisitions = new Acquisitions(backend, this.lines, this.leases, this.background, this.failures,
				guarded, settings.pollInterval(), settings.instanceName());
		this.atOnce = new AtOnceAcquisitions(this.acquisitions);
		this.lostSubscription = (backend instanceof SessionLeases sessions) ? sessions.onLost(this.leases::lostOnBackend)
				: null;
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
		Lease lease = acquireOrNull(name, key, options);
		if (lease == null) {
			return Optional.empty();
		}
		try (lease; Observation.Scope scope = EngineLease.observationOf(lease).openScope()) {
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
	@Override
	public @Nullable Lease acquireOrNull(String name, @Nullable Object key, LockOptions options) {
		return acquireOrNull(name, keyFor(name, key), true, options, null);
	}

	@Override
	public @Nullable Lease acquireSlot(String name, @Nullable Object key, int slot, LockOptions options) {
		return acquireSlot(name, key, slot, options, null);
	}

	@Override
	public @Nullable Lease acquireSlot(String name, @Nullable Object key, int slot, LockOptions options,
			@Nullable SlotWake wake) {
		LeaseHandle lease = acquireOrNull(name, this.keys.encodeSlot(name, key, slot), false, options, wake);
		return (lease != null) ? detached(lease) : null;
	}

	private static LeaseHandle detached(LeaseHandle lease) {
		lease.detachFromThread();
		return lease;
	}

	@Override
	public SlotWake slotWake(String name, @Nullable Object key, int permits) {
		String[] slotKeys = new String[permits];
		for (int i = 0; i < permits; i++) {
			slotKeys[i] = this.keys.encodeSlot(name, key, i);
		}
		return this.lines.slotWakes.wake(slotKeys);
	}

	private @Nullable LeaseHandle acquireOrNull(String name, String fullKey, boolean reentrant, LockOptions options,
			@Nullable SlotWake wake) {
		if (this.closed) {
			throw new LockBackendException("Holdfast is shut down: lock '" + shownKey(fullKey) + "' was not acquired",
					null);
		}
		if (options.getMode() == LockMode.READ) {
			return acquireRead(name, fullKey, reentrant, options);
		}
		HeldLease current = reentrant ? this.leases.get(fullKey) : null;
		if (current != null && current.isShared() && current.isHeldBy(Thread.currentThread())) {
			throw new IllegalStateException("Lock '" + shownKey(fullKey) + "' is read-held by this thread, which "
					+ "asks for it in WRITE mode: a read hold is never upgraded (RWL-4; two upgrading readers would "
					+ "wait for each other forever). Take the lock in WRITE mode before reading.");
		}
		if (current != null && current.isHeldBy(Thread.currentThread()) && current.enterReentrant()) {
			LeaseHandle hold = reentered(current, new LeaseHandle(current), options);
			if (hold != null) {
				return hold;
			}
		}
		if (this.acquisitions.isDraining()) {
			throw this.acquisitions.shuttingDown(fullKey);
		}
		try {
			HeldLease lease = this.acquisitions.acquire(name, fullKey, leaseTime(options), options.isRenew(),
					waitTime(options), wake);
			return (lease != null) ? new LeaseHandle(lease) : null;
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(shownKey(fullKey), ex);
		}
	}

	/**
	 * A reentrant {@code hold} of {@code current} gets at least the lease time it asks for, or
	 * fails; {@code null} when the extension found the lock gone (the lease is lost, and the
	 * acquisition takes the lock anew).
	 */
	private @Nullable LeaseHandle reentered(HeldLease current, LeaseHandle hold, LockOptions options) {
		boolean covered;
		try {
			covered = this.leases.coversLeaseTime(current, leaseTime(options));
		}
		catch (RuntimeException ex) {
			hold.close();
			throw ex;
		}
		if (covered) {
			return hold;
		}
		hold.close();
		return null;
	}

	/**
	 * A read hold (RWL-2 to RWL-4): the write lease of this thread or its read hold reentered, else
	 * a hold in this template's read lease of the key, whose shared attempt the backend granted.
	 */
	private @Nullable LeaseHandle acquireRead(String name, String fullKey, boolean reentrant, LockOptions options) {
		if (!reentrant) {
			throw new UnsupportedOperationException("A slot of '" + name + "' was asked for in READ mode (RWL-10)");
		}
		if (!(this.backend instanceof SharedLocks)) {
			throw new UnsupportedOperationException("Lock '" + shownKey(fullKey) + "' was asked for in READ mode, but "
					+ SharedLocks.unsupportedBy(this.backend) + ". Use LockMode.WRITE, or a backend that gives read holds.");
		}
		HeldLease current = this.leases.get(fullKey);
		if (current != null && current.isHeldBy(Thread.currentThread())
				&& (current.isShared() ? current.enterRead() : current.enterReentrant())) {
			LeaseHandle hold = reentered(current,
					current.isShared() ? new LeaseHandle(current, null) : new LeaseHandle(current), options);
			if (hold != null) {
				return hold;
			}
		}
		if (this.acquisitions.isDraining()) {
			throw this.acquisitions.shuttingDown(fullKey);
		}
		try {
			return this.acquisitions.acquireRead(name, fullKey, leaseTime(options), options.isRenew(),
					waitTime(options));
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(shownKey(fullKey), ex);
		}
	}

	@Override
	public @Nullable List<Lease> acquireAllAtOnce(String name, List<String> keys, LockOptions options) {
		List<HeldLease> taken = openAtOnce(options)
				? this.atOnce.acquireAll(name, keys, leaseTime(options), options.isRenew()) : null;
		return (taken != null) ? taken.stream().<Lease>map(LeaseHandle::new).toList() : null;
	}

	/** SEM-7: the slots in one backend call where it can, else {@link LockEngine}'s try of each. */
	@Override
	public @Nullable Lease acquireFirstSlot(String name, @Nullable Object key, List<Integer> slots, LockOptions options) {
		List<String> slotKeys = slots.stream().map((slot) -> this.keys.encodeSlot(name, key, slot)).toList();
		if (waitTime(options).isZero() && openAtOnce(options) && this.atOnce.takesFirstAtOnce(slotKeys)) {
			HeldLease taken = this.atOnce.acquireFirst(name, slotKeys, leaseTime(options), options.isRenew());
			// refused: none free (no try of each); the backend found it cannot after all: a try of each
			if (taken != null || this.atOnce.acquiresAtOnce()) {
				return (taken != null) ? detached(new LeaseHandle(taken)) : null;
			}
		}
		return LockEngine.super.acquireFirstSlot(name, key, slots, options);
	}

	private boolean openAtOnce(LockOptions options) {
		return options.getMode() != LockMode.READ && !this.closed && !this.acquisitions.isDraining();
	}

	/** The backend key of a lock, as {@link LockKeys} encodes it. */
	@Override
	public String keyFor(String name, @Nullable Object key) {
		return this.keys.encode(name, key);
	}

	/** The leases this template holds now, and the locks {@linkplain #listHeld listed} with them. */
	@Override
	public List<LeaseInfo> heldLeases() {
		return this.leases.list();
	}

	/** Also seen by the graceful shutdown, which waits for listed locks too. */
	@Override
	public Runnable listHeld(Supplier<LeaseInfo> lock) {
		return this.leases.listHeld(lock);
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
		return this.backend instanceof AsyncLockBackend;
	}

	@Override
	public CompletableFuture<@Nullable Lease> tryAcquireAsync(String name, @Nullable Object key,
			LockOptions options) {
		if (!supportsNonBlocking()) {
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
		if (this.acquisitions.isDraining()) {
			return CompletableFuture.failedFuture(this.acquisitions.shuttingDown(fullKey));
		}
		if (options.getMode() == LockMode.READ) {
			return CompletableFuture.failedFuture(new UnsupportedOperationException("Lock '" + shownKey(fullKey)
					+ "' was asked for in READ mode without blocking, which AsyncLockTemplate does not give yet "
					+ "(RWL-10): take the read hold with LockTemplate.acquire(...) on a thread that may block."));
		}
		return this.acquisitions.acquireAsync(name, fullKey, leaseTime(options), options.isRenew(),
				waitTime(options));
	}

	@Override
	public CompletionStage<Void> releaseAsync(Lease lease) {
		if (lease instanceof LeaseHandle handle) {
			return handle.closeAsync();
		}
		lease.close();
		return CompletableFuture.completedFuture(null);
	}

	/**
	 * Releases sent in the background whose answer from the backend is outstanding, background
	 * calls (withdrawals, retried releases) still pending, and, once acquisitions stop, waiting
	 * acquisitions that have not ended yet (each submits its withdrawal as it ends); a graceful
	 * shutdown waits for them as for held leases, before the connections close.
	 */
	public int releasesInFlight() {
		return this.releases.inFlight() + this.background.pending()
				+ (this.acquisitions.isDraining() ? this.acquisitions.waiting.get() : 0);
	}

	/**
	 * Refuses new acquisitions from now on, for a graceful shutdown: they fail with a
	 * {@link LockBackendException} saying that Holdfast is shutting down, and so do acquisitions
	 * waiting now (which withdraw their records on the backend). Leases already held stay held
	 * and renewed until released or {@link #close() closed}, and their threads can still enter
	 * them again (reentrancy).
	 */
	public void stopAcquiring() {
		this.acquisitions.draining(true);
		this.background.draining(true);
	}

	/**
	 * Takes new acquisitions again after {@link #stopAcquiring()}, for an application context
	 * that is started again after a stop. Has no effect once {@link #close() closed}.
	 */
	public void resumeAcquiring() {
		this.acquisitions.draining(false);
		this.background.draining(false);
	}

	@Override
	public EngineThreads threads() {
		return this.leases.threads;
	}

	/**
	 * Ends waiting acquisitions, waits at most 5 s for them and for releases and background calls
	 * in flight, stops renewals and the release subscription; later acquisitions fail with
	 * {@link LockBackendException}. A lease still held is marked lost and left to expire on the
	 * backend (rules SHD-2, SHD-3 of docs/DESIGN.md); closing it later releases it, owner-checked.
	 */
	@Override
	public void close() {
		this.closed = true;
		this.acquisitions.draining(true);
		this.background.draining(true);
		try {
			long deadline = System.nanoTime() + CLOSE_WAITS.toNanos();
			// Waiters end on their own threads: their withdrawals are submitted only then.
			this.acquisitions.awaitWaitersEnded(CLOSE_WAITS);
			if (!this.releases.awaitInFlight(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())))
					|| !this.background.awaitIdle(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())))) {
				logger.warn("Holdfast closes with " + releasesInFlight() + " release(s) or withdrawal(s) not answered by the "
						+ this.backend.name() + " backend after " + CLOSE_WAITS.toSeconds()
						+ "s; those locks and records expire on the backend by themselves");
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		this.leases.close();
		this.lines.close();
		if (this.lostSubscription != null) {
			try {
				this.lostSubscription.close();
			}
			catch (Exception ex) {
				logger.debug("Could not close the lost-lease subscription", ex);
			}
		}
		this.background.close();
	}

	/**
	 * Opens now what the first contended acquisition would otherwise open: the backend's release
	 * subscription (in the background, as the backend opens it). Called when the application
	 * starts; see {@link #releaseEventsListening()}.
	 */
	public void prepare() {
		if (this.lines.announcing()) {
			this.lines.subscribed();
		}
	}

	/** Whether release events reach waiters now: true without them (waiters poll), else once the subscription listens. */
	public boolean releaseEventsListening() {
		return !this.lines.announcing() || (this.lines.hasSubscription() && ((ReleaseEvents) this.backend).isListening());
	}

	/**
	 * Closes the release subscription that {@link #prepare()} or a contended acquisition opened, while the
	 * backend's connections are open (the context stops); waiters poll until something opens it again.
	 */
	public void closeReleaseEvents() {
		this.lines.closeSubscription(false);
	}

	/** {@code key} as logs and messages show it: see {@link LockSettings#showKeyValues()}. */
	@Override
	public String shownKey(String key) {
		return this.failures.shown(key);
	}

	@Override
	public Duration waitTime(LockOptions options) {
		return (options.getWaitTime() != null) ? options.getWaitTime() : this.settings.waitTime();
	}

	@Override
	public Duration pollInterval() {
		return this.settings.pollInterval();
	}

	@Override
	public Duration leaseTime(LockOptions options) {
		return (options.getLeaseTime() != null) ? options.getLeaseTime() : this.settings.leaseTime();
	}

}
