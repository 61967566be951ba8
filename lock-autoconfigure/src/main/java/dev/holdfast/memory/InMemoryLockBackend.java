package dev.holdfast.memory;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
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
import dev.holdfast.spi.SharedLocks;
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
 * <li>Read holds ({@link SharedLocks}, RWL-11 to RWL-13): the readers are kept in the key's entry,
 * whose owner is then {@value #READERS} and whose expiry is the latest reader's; a reader's
 * token is the counter's value when its group formed. A waiting writer refused by readers stamps
 * the entry for its record time, which refuses new readers, also after the last reader left.</li>
 * <li>Tick claims: one record per scheduled job, apart from the locks, holding the last claimed
 * tick; it expires on the same monotonic clock. Which tick is due is judged by the backend's
 * {@link Clock} (the JVM's wall clock unless given one), the cluster's clock for every instance
 * that shares this backend.</li>
 * </ul>
 * Memory is bounded by the locks held and the jobs that claimed ticks recently: released locks
 * are removed at once, and expired locks and tick records are swept every 1,024 acquisitions
 * and claims.
 */
public class InMemoryLockBackend implements LockBackend, AsyncLockBackend, LeaseRenewal, ReleaseEvents,
		BackendHealth, TickClaims, ClusterLocks, SharedLocks {

	private static final int SWEEP_EVERY = 1024;

	/** The owner of an entry held by readers (decision 0048): no owner token starts with {@code ~}. */
	static final String READERS = "~readers";

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

	/**
	 * {@link #tryAcquire}; refused while readers hold the key, it also stamps the entry so that
	 * new readers are refused for {@code recordFor} (RWL-12).
	 */
	@Override
	public AcquireResult tryAcquireAsWaitingWriter(String key, String owner, Duration ttl, Duration recordFor) {
		AcquireResult result = tryAcquire(key, owner, ttl);
		if (!result.acquired()) {
			long now = System.nanoTime();
			this.locks.computeIfPresent(key, (k, current) -> (current.readers != null && !current.expired(now))
					? current.stamped(now + recordFor.toNanos()) : current);
		}
		return result;
	}

	/**
	 * Granted when the key is free or read-held and no writer's stamp is live; the token is the
	 * counter's value when the group formed: at least every earlier write's, below every later
	 * one's. Waiting readers are woken by the release events every release of a holder sends.
	 */
	@Override
	public AcquireResult tryAcquireShared(String key, String owner, Duration ttl, Duration recordFor) {
		sweepEveryNthCall();
		long now = System.nanoTime();
		long expires = now + ttl.toNanos();
		Entry result = this.locks.compute(key, (k, current) -> {
			if (current != null && current.writerWaits(now)) {
				return current;
			}
			if (current == null || current.expired(now)) {
				return new Entry(READERS, expires, this.fence.get(), Map.of(owner, expires), now, false);
			}
			return (current.readers != null) ? current.withReader(owner, expires, now) : current;
		});
		if (result.readers != null && result.readers.containsKey(owner) && !result.writerWaits(now)) {
			return AcquireResult.acquired(result.token);
		}
		long until = result.writerWaits(now) ? Math.max(result.expiresAtNanos, result.writerWaitsUntil)
				: result.expiresAtNanos;
		return AcquireResult.held(Math.max(0, TimeUnit.NANOSECONDS.toMillis(until - now)));
	}

	@Override
	public Set<String> renewShared(Collection<HeldLock> holds) {
		Set<String> renewed = new HashSet<>();
		long now = System.nanoTime();
		for (HeldLock hold : holds) {
			Entry result = this.locks.computeIfPresent(hold.key(),
					(k, current) -> current.holdsReader(hold.owner(), now)
							? current.withReader(hold.owner(), now + hold.ttl().toNanos(), now) : current);
			if (result != null && result.holdsReader(hold.owner(), now)) {
				renewed.add(hold.key());
			}
		}
		return renewed;
	}

	@Override
	public boolean release(String key, String owner) {
		long now = System.nanoTime();
		boolean[] released = new boolean[1];
		boolean[] freed = new boolean[1];
		this.locks.computeIfPresent(key, (k, current) -> {
			if (current.owner.equals(owner) && !current.expired(now)) {
				released[0] = true;
				freed[0] = true;
				return current.freed(now);
			}
			if (current.readers != null && current.readers.containsKey(owner) && !current.expired(now)) {
				released[0] = true;
				Entry left = current.withReader(owner, null, now);
				freed[0] = left.readers == null;
				return freed[0] ? current.freed(now) : left;
			}
			return current;
		});
		if (freed[0]) {
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
			.map((entry) -> new BackendLock(entry.getKey(), entry.getValue().holder(now), entry.getValue().token,
					TimeUnit.NANOSECONDS.toMillis(entry.getValue().expiresAtNanos - now)))
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
			this.locks.entrySet().removeIf((entry) -> entry.getValue().gone(now));
			this.ticks.entrySet().removeIf((entry) -> entry.getValue().expired(now));
		}
	}

	/**
	 * A key's entry: the writer's, or the readers' ({@code readers}: owner to expiry; the entry's
	 * expiry is the latest), or a free one kept for a waiting writer's stamp.
	 */
	private record Entry(String owner, long expiresAtNanos, long token, @Nullable Map<String, Long> readers,
			long writerWaitsUntil, boolean stamp) {

		Entry(String owner, long expiresAtNanos, long token) {
			this(owner, expiresAtNanos, token, null, 0, false);
		}

		boolean expired(long now) {
			return now - this.expiresAtNanos >= 0;
		}

		/** Whether it is gone for good: expired, and no writer's stamp is live. */
		boolean gone(long now) {
			return expired(now) && !writerWaits(now);
		}

		boolean writerWaits(long now) {
			return this.stamp && now - this.writerWaitsUntil < 0;
		}

		/** The holder a listing shows: the instance, or of a read-held entry its live readers (RWL-17). */
		@Nullable String holder(long now) {
			if (!READERS.equals(this.owner)) {
				return InstanceNames.of(this.owner);
			}
			Map<String, Long> readers = (this.readers != null) ? this.readers : Map.of();
			return InstanceNames.readers(readers.values().stream().filter((until) -> now - until < 0).count());
		}

		boolean holdsReader(String reader, long now) {
			Long until = (this.readers != null) ? this.readers.get(reader) : null;
			return until != null && now - until < 0;
		}

		Entry stamped(long until) {
			return new Entry(this.owner, this.expiresAtNanos, this.token, this.readers, until, true);
		}

		/** Free now; kept while a writer's stamp is live, else {@code null} (removed). */
		@Nullable Entry freed(long now) {
			return writerWaits(now) ? new Entry("", now, this.token, null, this.writerWaitsUntil, true) : null;
		}

		/** The readers' entry with {@code reader} until {@code until} ({@code null}: without it), the expired left out. */
		Entry withReader(String reader, @Nullable Long until, long now) {
			Map<String, Long> live = new HashMap<>();
			this.readers.forEach((other, expires) -> {
				if (now - expires < 0) {
					live.put(other, expires);
				}
			});
			if (until != null) {
				live.merge(reader, until, Math::max);
			}
			else {
				live.remove(reader);
			}
			long latest = now;
			for (long expires : live.values()) {
				latest = (expires - latest > 0) ? expires : latest;
			}
			return new Entry(READERS, latest, this.token, live.isEmpty() ? null : Map.copyOf(live),
					this.writerWaitsUntil, this.stamp);
		}

	}

	private record TickRecord(Instant tick, long expiresAtNanos) {

		boolean expired(long now) {
			return now - this.expiresAtNanos >= 0;
		}

	}

}
