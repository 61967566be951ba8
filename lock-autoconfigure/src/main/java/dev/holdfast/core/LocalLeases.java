package dev.holdfast.core;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.Semaphore;
import java.util.function.Supplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LeaseInfo;
import dev.holdfast.LockInterruptedException;
import dev.holdfast.LockListener;
import dev.holdfast.LockListener.LockObservation;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.SessionLeases;
import dev.holdfast.spi.SharedLocks;
import dev.holdfast.support.ReadHolds;

/**
 * The leases one template holds, by key: at most one per key, from the acquisition that took
 * it until the backend answered its release. Holds, validity and loss live here:
 * <ul>
 * <li>a lease is valid while it is active (not released, not lost), its time to live less the
 * backend's drift allowance has not passed since the request that confirmed it was sent, and
 * the backend does not say it is suspended;</li>
 * <li>a loss is reported once, the same way on every backend: WARN, the lease's observation and
 * {@link LockListener#leaseLost};</li>
 * <li>a released lease stays here, not valid, until its release was answered, so that this
 * process knows the release is in flight.</li>
 * </ul>
 */
final class LocalLeases {

	private static final Log logger = LogFactory.getLog(DefaultLockTemplate.class);

	private final LockBackend backend;

	private final Failures failures;

	private final LockListener listener;

	private final Clock clock;

	private final @Nullable SessionLeases sessions;

	private final Releases releases;

	private final @Nullable LeaseRenewer renewer;

	/** The template's timer and worker (REN-1). */
	final EngineThreads threads;

	private final ConcurrentHashMap<String, HeldLease> held = new ConcurrentHashMap<>();

	/** Locks taken without this template but listed with its leases, while their holders run. */
	private final Set<Supplier<LeaseInfo>> listed = ConcurrentHashMap.newKeySet();

	private volatile DriftAllowance lastDrift = new DriftAllowance(Duration.ZERO, 0);

	LocalLeases(LockBackend backend, Failures failures, LockListener listener, Clock clock, Releases releases,
			EngineThreads threads) {
		this.backend = backend;
		this.failures = failures;
		this.listener = listener;
		this.clock = clock;
		this.releases = releases;
		this.sessions = (backend instanceof SessionLeases sessionLeases) ? sessionLeases : null;
		this.threads = threads;
		this.renewer = (backend instanceof LeaseRenewal renewal)
				? new LeaseRenewer(this, renewal, (backend instanceof SharedLocks shared) ? shared : null, failures,
						this.held.values(), threads)
				: null;
	}

	/** The lease of {@code key} held by this template, valid or not, or {@code null}. */
	@Nullable HeldLease get(String key) {
		return this.held.get(key);
	}

	/**
	 * Registers a lease the backend just gave this template; the lease starts when the request
	 * that took it was sent ({@code sentNanos}).
	 */
	HeldLease register(String name, String key, String owner, long token, Duration ttl, boolean renew, long sentNanos,
			LockObservation observation) {
		// The hold starts before the lease can be lost or released.
		observation.acquired(token);
		HeldLease lease = new HeldLease(this, name, key, owner, token, ttl, renew, sentNanos, now(), observation);
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

	/**
	 * Registers a read lease the backend just gave this template with {@code owner}, or, when
	 * another local reader registered a valid one of {@code key} in the same group (same token)
	 * meanwhile, enters that one (RWL-16): the caller then gives back {@code owner}'s hold, which no
	 * lease has, and covers its lease time ({@link #coversLeaseTime}). A valid read lease of
	 * another token is lost (its group ended on the backend); one whose holds reached 0 is
	 * replaced without a loss.
	 * @return the read lease now holding the calling thread's read hold
	 */
	HeldLease registerShared(String name, String key, String owner, long token, Duration ttl, boolean renew,
			long sentNanos, LockObservation observation) {
		HeldLease[] replaced = new HeldLease[1];
		HeldLease[] created = new HeldLease[1];
		HeldLease lease = this.held.compute(key, (k, previous) -> {
			if (previous != null && previous.isShared() && previous.fencingToken() == token
					&& previous.enterReentrant()) {
				return previous;
			}
			replaced[0] = (previous != null && !previous.ended()) ? previous : null;
			created[0] = new HeldLease(this, name, key, owner, token, ttl, renew, sentNanos, now(), observation,
					new ReadHolds());
			return created[0];
		});
		// Listener code outside the map update.
		startReadHold(lease, observation);
		if (replaced[0] != null) {
			lost(replaced[0], "its read group ended on the backend and a new one was formed");
		}
		if (created[0] != null) {
			if (renew && this.renewer != null) {
				this.renewer.add(lease);
			}
		}
		else {
			renewIfAsked(lease, renew);
		}
		return lease;
	}

	/**
	 * Before a join's shared attempt with {@code lease}'s owner (RWL-15): raises what requests for
	 * it ask to at least {@code ttl}, waiting for a renewal in flight; returns the ttl to send.
	 */
	Duration joinTtl(HeldLease lease, Duration ttl) {
		Semaphore timeToLive = lease.timeToLiveLock();
		timeToLive.acquireUninterruptibly();
		try {
			return lease.raiseTtl(ttl);
		}
		finally {
			timeToLive.release();
		}
	}

	/**
	 * The backend granted a join's shared attempt with {@code lease}'s owner, sent at
	 * {@code sentNanos} with {@code sentTtl}, with {@code token} (RWL-15): the calling thread's hold
	 * entered it, or {@code null} when it did not (the caller gives the owner back if the lease
	 * {@linkplain HeldLease#ended ended}, RWL-18). Another token is a new group: the lease is lost.
	 */
	@Nullable HeldLease joined(HeldLease lease, long token, long sentNanos, Duration sentTtl, boolean renew,
			LockObservation observation) {
		if (token != lease.fencingToken()) {
			lost(lease, "its read group ended on the backend and its owner was granted again in a new one");
			return null;
		}
		if (!lease.isActive()) {
			return null;
		}
		// Same group: the owner's hold was refreshed for sentTtl (covering the joiner's lease time, ENG-3).
		lease.confirmedExtending(sentNanos, sentTtl);
		if (!lease.enterReentrant()) {
			return null;
		}
		startReadHold(lease, observation);
		renewIfAsked(lease, renew);
		return lease;
	}

	/**
	 * A hold counted in {@code lease} starts: observed acquired, then listed with its readers;
	 * lost at once if the lease was lost before it was listed.
	 */
	private static void startReadHold(HeldLease lease, LockObservation observation) {
		observation.acquired(lease.fencingToken());
		lease.readers().enter(Thread.currentThread(), observation);
		if (!lease.isActive()) {
			lease.readers().lostIfOpen(observation);
		}
	}

	private void renewIfAsked(HeldLease lease, boolean renew) {
		if (renew && this.renewer != null && lease.renewOn()) {
			this.renewer.add(lease);
		}
	}

	/**
	 * How long this template still holds {@code key} for sure, in nanoseconds, counting a release
	 * in flight as held: 0 when neither a valid lease nor a release of it is.
	 */
	long holdNanos(String key) {
		HeldLease lease = this.held.get(key);
		return (lease != null && (lease.isValid() || lease.isReleased())) ? lease.untilExpiryNanos() : 0;
	}

	/** The release of {@code lease} was answered (or failed): it leaves the map. */
	void forget(HeldLease lease) {
		this.held.remove(lease.key(), lease);
	}

	/**
	 * The unexpired lease of {@code key} whose release this template has in flight, or {@code null};
	 * asked before every attempt, it allocates nothing. Only on a backend with a non-blocking
	 * release, where an acquisition sent after the release is ordered behind it: elsewhere (JDBC) a
	 * waiter retried on its own process's release would win nearly every handoff.
	 */
	@Nullable HeldLease releaseInFlight(String key) {
		if (!(this.backend instanceof AsyncLockBackend)) {
			return null;
		}
		HeldLease lease = this.held.get(key);
		CompletableFuture<Void> done = (lease != null) ? lease.releasing() : null;
		return (done != null && !done.isDone() && lease.untilExpiryNanos() > 0) ? lease : null;
	}

	/** Completes when the release of {@code lease} is answered, or when it expires on the backend anyway. */
	static CompletableFuture<Void> answerOrExpiry(HeldLease lease) {
		CompletableFuture<Void> done = lease.releasing();
		long left = lease.untilExpiryNanos();
		return (done == null || done.isDone() || left <= 0) ? CompletableFuture.completedFuture(null)
				: done.copy().completeOnTimeout(null, left, TimeUnit.NANOSECONDS);
	}

	Releases releases() {
		return this.releases;
	}

	/**
	 * Sets the lease's time to live on the backend to {@code ttl}, owner-checked; false (and the
	 * lease lost) if its owner does not hold it any more.
	 */
	boolean extend(HeldLease lease, Duration ttl) {
		if (!(this.backend instanceof LeaseRenewal renewal)) {
			throw new UnsupportedOperationException("The " + this.backend.name() + " backend cannot extend leases");
		}
		SharedLocks shared = lease.isShared() ? (SharedLocks) this.backend : null;
		if (ttl.isNegative() || ttl.isZero()) {
			throw new IllegalArgumentException("ttl must be positive, was " + ttl);
		}
		if (!lease.isActive()) {
			return false;
		}
		// Never beside a renewal of this lease: the backend could apply the older request last.
		Semaphore timeToLive = lease.timeToLiveLock();
		try {
			timeToLive.acquire();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockInterruptedException(this.failures.shown(lease.key()), ex);
		}
		try {
			if (!lease.isActive()) {
				return false;
			}
			// A read lease's owner is never asked a shorter ttl than before (RWL-15).
			Duration sent = (shared != null) ? lease.raiseTtl(ttl) : ttl;
			long start = System.nanoTime();
			Set<String> renewed;
			try {
				List<HeldLock> locks = List.of(new HeldLock(lease.key(), lease.owner(), sent));
				renewed = (shared != null) ? shared.renewShared(locks) : renewal.renew(locks);
			}
			catch (RuntimeException ex) {
				throw this.failures.of(ex, "extend", lease.key());
			}
			if (renewed.contains(lease.key())) {
				lease.confirmed(start, sent);
				return true;
			}
		}
		finally {
			timeToLive.release();
		}
		lost(lease, "it was not held by its owner any more when extended");
		return false;
	}

	/**
	 * A reentrant hold of {@code lease} asks for {@code ttl}: it gets at least that. A renewed
	 * lease lives while it is held; one that is not renewed is extended on the backend
	 * (owner-checked) when less is left. False when the extension found the lock not held any
	 * more (the lease is then lost).
	 * @throws UnsupportedOperationException if the backend cannot extend leases and less is left
	 */
	boolean coversLeaseTime(HeldLease lease, Duration ttl) {
		if (lease.renew() || lease.untilExpiryNanos() >= ttl.toNanos() - driftNanos(ttl)) {
			return true;
		}
		if (!(this.backend instanceof LeaseRenewal)) {
			throw new UnsupportedOperationException("Lock '" + this.failures.shown(lease.key()) + "' is held by this "
					+ "thread with less time left than the " + ttl + " asked for again, and the " + this.backend.name()
					+ " backend cannot extend leases: ask for no longer a lease than the outer acquisition's");
		}
		return extend(lease, ttl);
	}

	/** Marks {@code lease} lost, once, and reports it: WARN, its observation, the listener. */
	void lost(HeldLease lease, String reason) {
		if (lease.markLost()) {
			reportLost(lease, reason);
		}
	}

	/**
	 * Reports the loss of {@code lease} without changing its state: for a loss found as it is
	 * released (its state then says released); the caller reports each lease at most once.
	 */
	void reportLost(HeldLease lease, String reason) {
		logger.warn("Holdfast lost lock '" + this.failures.shown(lease.key()) + "' (fencing token "
				+ lease.fencingToken() + ") because " + reason
				+ ". Code that still runs under it is no longer exclusive; fencing tokens protect the resource.");
		if (lease.readers() != null) {
			// Every open read hold once, the first reader's among them.
			lease.readers().lost();
		}
		else {
			lease.observation().lost();
		}
		this.listener.leaseLost(lease.name(), this.backend.name(), lease.mode());
	}

	/** The backend reported {@code owner}'s lock at {@code key} lost. */
	void lostOnBackend(String key, String owner, String reason) {
		HeldLease lease = this.held.get(key);
		if (lease != null && lease.owner().equals(owner)) {
			lost(lease, reason);
		}
	}

	/** Whether the backend cannot vouch for any lease now ({@link SessionLeases#suspended()}). */
	boolean suspended() {
		return this.sessions != null && this.sessions.suspended();
	}

	Instant now() {
		return this.clock.instant();
	}

	/**
	 * The backend's {@linkplain LockBackend#clockDriftAllowance drift allowance} for {@code ttl}, in
	 * nanoseconds; the last one is kept, as applications use one or a few times to live.
	 */
	long driftNanos(Duration ttl) {
		DriftAllowance last = this.lastDrift;
		if (!last.ttl().equals(ttl)) {
			last = new DriftAllowance(ttl, this.backend.clockDriftAllowance(ttl).toNanos());
			this.lastDrift = last;
		}
		return last.nanos();
	}

	private record DriftAllowance(Duration ttl, long nanos) {
	}

	/**
	 * The leases held now (not those released and waiting for the backend's answer), with their mode and
	 * holds (OBS-16), and the listed locks.
	 */
	List<LeaseInfo> list() {
		List<LeaseInfo> leases = new ArrayList<>();
		for (HeldLease lease : this.held.values()) {
			if (!lease.isReleased()) {
				leases.add(new LeaseInfo(lease.name(), lease.key(), lease.fencingToken(), lease.acquiredAt(),
						lease.expiresAt(), lease.isValid(), lease.mode(), Math.max(lease.holds(), 0)));
			}
		}
		for (Supplier<LeaseInfo> lock : this.listed) {
			leases.add(lock.get());
		}
		return leases;
	}

	Runnable listHeld(Supplier<LeaseInfo> lock) {
		this.listed.add(lock);
		return () -> this.listed.remove(lock);
	}

	/**
	 * Stops renewals and marks every lease still held lost (its code still runs at shutdown): it
	 * is left to expire on the backend after its time to live.
	 */
	void close() {
		this.threads.shutdown();
		for (HeldLease lease : new ArrayList<>(this.held.values())) {
			if (lease.isReleased()) {
				continue;
			}
			lost(lease, "the application shut down while it was still in use "
					+ "(spring.lifecycle.timeout-per-shutdown-phase ran out before its method returned); "
					+ "it is no longer renewed and expires on the backend within " + lease.ttl());
			this.held.remove(lease.key(), lease);
		}
	}

}
