package dev.holdfast.memory;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.BackendHealth;
import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.InstanceNames;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.TickClaims;

/**
 * Locks in this JVM's memory: for tests and single-instance applications. Two JVMs never see
 * each other's locks.
 * <ul>
 * <li>Not reentrant (the engine above is).</li>
 * <li>Expiry: this JVM's monotonic clock ({@link System#nanoTime()}).</li>
 * <li>Waiting: release events are delivered synchronously to subscribers.</li>
 * <li>Non-blocking: {@link AsyncLockBackend} stages are already complete when returned, since no
 * call waits for anything but a map update.</li>
 * <li>Fencing tokens come from one counter for all locks, so they strictly increase per lock
 * for the life of the JVM.</li>
 * <li>Tick claims: one record per scheduled job, apart from the locks, holding the last claimed
 * tick; it expires on the same monotonic clock. Which tick is due is judged by the backend's
 * {@link Clock} (the JVM's wall clock unless given one), the cluster's clock for every instance
 * that shares this backend.</li>
 * </ul>
 * Memory is bounded by the locks held and the jobs that claimed ticks recently: released locks
 * are removed at once, and expired locks and tick records are swept every 1,024 acquisitions
 * and claims.
 */
public class InMemoryLockBackend
		implements LockBackend, AsyncLockBackend, LeaseRenewal, ReleaseEvents, BackendHealth, TickClaims, ClusterLocks {

	private static final int SWEEP_EVERY = 1024;

	private final ConcurrentHashMap<String, Entry> locks = new ConcurrentHashMap<>();

	private final ConcurrentHashMap<String, TickRecord> ticks = new ConcurrentHashMap<>();

	private final AtomicLong fence = new AtomicLong();

	private final AtomicLong calls = new AtomicLong();

	private final CopyOnWriteArrayList<Consumer<String>> listeners = new CopyOnWriteArrayList<>();

	private final Clock clock;

	/** A backend whose tick claims are judged by the JVM's wall clock. */
	public InMemoryLockBackend() {
		this(Clock.systemUTC());
	}

	/**
	 * A backend whose tick claims are judged by {@code clock}: the clock of the cluster of the
	 * instances (application contexts) that share this backend, whatever their own clocks.
	 */
	public InMemoryLockBackend(Clock clock) {
		this.clock = clock;
	}

	@Override
	public String name() {
		return "memory";
	}

	@Override
	public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
		sweepEveryNthCall();
		long now = System.nanoTime();
		Entry candidate = new Entry(owner, now + ttl.toNanos(), 0);
		Entry result = this.locks.compute(key, (k, current) -> (current == null || current.expired(now))
				? new Entry(owner, candidate.expiresAtNanos, this.fence.incrementAndGet()) : current);
		if (result.owner.equals(owner)) {
			return AcquireResult.acquired(result.token);
		}
		return AcquireResult.held(Math.max(0, TimeUnit.NANOSECONDS.toMillis(result.expiresAtNanos - now)));
	}

	@Override
	public boolean release(String key, String owner) {
		long now = System.nanoTime();
		boolean[] released = new boolean[1];
		this.locks.computeIfPresent(key, (k, current) -> {
			if (current.owner.equals(owner) && !current.expired(now)) {
				released[0] = true;
				return null;
			}
			return current;
		});
		if (released[0]) {
			for (Consumer<String> listener : this.listeners) {
				listener.accept(key);
			}
		}
		return released[0];
	}

	/** The live locks under {@code prefix}, ordered by key: a pass over the map. */
	@Override
	public Listing listLocks(String prefix, int max) {
		long now = System.nanoTime();
		List<BackendLock> found = this.locks.entrySet()
			.stream()
			.filter((entry) -> entry.getKey().startsWith(prefix) && !entry.getValue().expired(now))
			.map((entry) -> new BackendLock(entry.getKey(), InstanceNames.of(entry.getValue().owner),
					entry.getValue().token, TimeUnit.NANOSECONDS.toMillis(entry.getValue().expiresAtNanos - now)))
			.sorted(Comparator.comparing(BackendLock::key))
			.toList();
		return new Listing(found.subList(0, Math.min(max, found.size())), found.size() <= max);
	}

	/** Removes the lock, whoever holds it; the token counter goes on, so the next token is larger. */
	@Override
	public boolean forceRelease(String key, @Nullable Long fencingToken) {
		long now = System.nanoTime();
		boolean[] released = new boolean[1];
		this.locks.computeIfPresent(key, (k, current) -> {
			released[0] = !current.expired(now) && (fencingToken == null || fencingToken == current.token);
			return released[0] ? null : current;
		});
		if (released[0]) {
			this.listeners.forEach((listener) -> listener.accept(key));
		}
		return released[0];
	}

	/**
	 * Claims {@code tick} if it is due by this backend's clock, within {@code tolerance}, and the
	 * job's record is absent, expired, or holds an earlier tick, in one atomic map update; the
	 * record then expires {@code ttl} from now.
	 */
	@Override
	public TickClaim claimTick(String key, Instant tick, Duration tolerance, Duration ttl) {
		sweepEveryNthCall();
		Instant time = this.clock.instant();
		if (Duration.between(tick, time).abs().compareTo(tolerance) > 0) {
			return new TickClaim(TickClaim.Outcome.NOT_DUE, time);
		}
		long now = System.nanoTime();
		TickRecord claim = new TickRecord(tick, now + ttl.toNanos());
		TickRecord result = this.ticks.compute(key,
				(k, current) -> (current == null || current.expired(now) || current.tick.isBefore(tick)) ? claim
						: current);
		return new TickClaim((result == claim) ? TickClaim.Outcome.CLAIMED : TickClaim.Outcome.TAKEN, time);
	}

	@Override
	public @Nullable Instant lastClaimedTick(String key) {
		TickRecord record = this.ticks.get(key);
		return (record != null && !record.expired(System.nanoTime())) ? record.tick : null;
	}

	@Override
	public CompletionStage<AcquireResult> tryAcquireAsync(String key, String owner, Duration ttl) {
		return CompletableFuture.completedFuture(tryAcquire(key, owner, ttl));
	}

	@Override
	public CompletionStage<Boolean> releaseAsync(String key, String owner) {
		return CompletableFuture.completedFuture(release(key, owner));
	}

	@Override
	public Set<String> renew(Collection<HeldLock> held) {
		Set<String> renewed = new HashSet<>();
		long now = System.nanoTime();
		for (HeldLock lock : held) {
			Entry result = this.locks.computeIfPresent(lock.key(),
					(k, current) -> (current.owner.equals(lock.owner()) && !current.expired(now))
							? new Entry(current.owner, now + lock.ttl().toNanos(), current.token) : current);
			if (result != null && result.owner.equals(lock.owner()) && !result.expired(now)) {
				renewed.add(lock.key());
			}
		}
		return renewed;
	}

	@Override
	public AutoCloseable subscribe(Consumer<String> listener) {
		this.listeners.add(listener);
		return () -> this.listeners.remove(listener);
	}

	/**
	 * Always up: memory is always reachable. Details: how many locks are in memory (tick records
	 * are not locks and are not counted).
	 */
	@Override
	public Check checkHealth() {
		return Check.up(Map.of("locks", this.locks.size()));
	}

	/** How many locks are in memory, live or expired and not yet swept. */
	public int size() {
		return this.locks.size();
	}

	/** How many tick records are in memory, live or expired and not yet swept. */
	int tickRecords() {
		return this.ticks.size();
	}

	/** Removes expired locks and tick records on every {@value #SWEEP_EVERY}th acquisition or claim. */
	private void sweepEveryNthCall() {
		if (this.calls.incrementAndGet() % SWEEP_EVERY == 0) {
			long now = System.nanoTime();
			this.locks.entrySet().removeIf((entry) -> entry.getValue().expired(now));
			this.ticks.entrySet().removeIf((entry) -> entry.getValue().expired(now));
		}
	}

	private record Entry(String owner, long expiresAtNanos, long token) {

		boolean expired(long now) {
			return now - this.expiresAtNanos >= 0;
		}

	}

	private record TickRecord(Instant tick, long expiresAtNanos) {

		boolean expired(long now) {
			return now - this.expiresAtNanos >= 0;
		}

	}

}
