package dev.holdfast.semaphore;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.ThreadLocalRandom;

import org.jspecify.annotations.Nullable;

import dev.holdfast.Lease;
import dev.holdfast.LockContext;
import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.PermitNotAcquiredException;
import dev.holdfast.core.EngineLease;
import dev.holdfast.core.LockEngine;
import dev.holdfast.core.LockKeys;
import dev.holdfast.core.SlotWake;

/**
 * Takes a permit of a semaphore through a {@link LockEngine}'s slot acquisitions: a semaphore
 * (name, key) of N permits is N locks, its permit slots {@code <key>#0} to {@code <key>#N-1} (a
 * form no (name, key) pair of a lock takes), and a permit is the lease of one of them, with every
 * rule of a lease (owner token, expiry by the backend's clock, renewal, loss, the slot's fencing
 * token). Rules SEM-1 to SEM-7 of docs/DESIGN.md:
 * <ul>
 * <li>each round tries every slot once, starting at a random one; the first free slot is the
 * permit (one backend round trip where the engine takes the first free of several at once,
 * SEM-7; else when it is the first tried);</li>
 * <li>a call that waits waits on one slot per round (round robin), for a slice that starts at
 * {@link #SLICE} and doubles per fruitless round up to the poll interval (woken by that slot's
 * release events, or polling as the engine does); that wait's first attempt is the round's try
 * of that slot; a release of another slot that reaches the engine ends the wait of one call, which
 * tries that slot once (SEM-8);</li>
 * <li>permits are not reentrant: each acquisition takes a permit of its own, on any thread, as
 * {@link java.util.concurrent.Semaphore} does;</li>
 * <li>every call of one engine must give a semaphore the same permits (checked at each call); a
 * call that finds every slot held checks that slot N is free, at most once per
 * {@link #CHECK_SLOT_LEASE} per engine: a holder there uses the semaphore with more permits, and
 * the call fails naming the fix.</li>
 * </ul>
 */
public final class PermitSlots {

	/** The most permits of one semaphore: a call that finds them all held tries each one. */
	public static final int MAX_PERMITS = 64;

	/** How long a waiting call first waits on one slot before it tries every slot again (jittered ±50%). */
	static final Duration SLICE = Duration.ofMillis(100);

	/** The slot that serializes the checks of slot N, so that one check never sees another's. */
	static final int CHECK_SLOT = -1;

	/** The lease of slot N while a check holds it, not renewed: gone by itself if its release fails. */
	static final Duration CHECK_LEASE = Duration.ofSeconds(1);

	/**
	 * The lease of the check slot, not renewed and never released: it outlives slot N of its
	 * check (taken within a slice after it), so that no check sees another's; also how long an
	 * engine trusts a passed check.
	 */
	static final Duration CHECK_SLOT_LEASE = Duration.ofSeconds(2);

	/** The most semaphores whose permits an engine remembers; the least recently used is dropped. */
	static final int REMEMBERED = 1024;

	/** Per engine (weakly), per semaphore key: its permits and until when its check passed. */
	private static final Map<LockEngine, Map<String, Use>> USES = new WeakHashMap<>();

	private PermitSlots() {
	}

	/**
	 * A permit of the semaphore of {@code permits} permits of (name, key), or {@code null} if none
	 * was free within the wait time and {@code throwing} is off.
	 * @param throwing whether a semaphore whose permits stay held throws a
	 * {@link PermitNotAcquiredException}
	 * @throws IllegalArgumentException if {@code permits} is not 1 to {@value #MAX_PERMITS}, or an
	 * earlier call of this engine gave the semaphore other permits
	 * @throws IllegalStateException if another instance uses the semaphore with more permits
	 * @throws UnsupportedOperationException if {@code template} is not Holdfast's engine
	 */
	public static @Nullable Lease acquire(LockTemplate template, String name, @Nullable Object key, int permits,
			LockOptions options, boolean throwing) {
		requirePermits(permits, name);
		if (options.getMode() == LockMode.READ) {
			throw new UnsupportedOperationException("A permit of '" + name + "' was asked for in READ mode: "
					+ "semaphores have no read mode (RWL-10). Take permits in the default WRITE mode.");
		}
		LockEngine engine = engineOf(template);
		String semaphoreKey = engine.keyFor(name, key);
		boolean checked = remember(engine, semaphoreKey, permits);
		Duration waitTime = engine.waitTime(options);
		long deadline = System.nanoTime() + waitTime.toNanos();
		LockOptions once = options.waitTime(Duration.ZERO);
		ThreadLocalRandom random = ThreadLocalRandom.current();
		int start = random.nextInt(permits);
		long slice = SLICE.toNanos();
		SlotWake wake = null;
		for (int round = 0;; round++) {
			int waited = (start + round) % permits;
			// a call that waits tries the slot it waits on with its wait's first attempt, not twice
			boolean waits = deadline - System.nanoTime() > 0;
			List<Integer> scan = new ArrayList<>(permits);
			for (int i = 0; i < permits; i++) {
				int slot = (start + i) % permits;
				if (!waits || slot != waited) {
					scan.add(slot);
				}
			}
			// the first free slot in the scan's order, in one backend call where the engine can (SEM-7)
			Lease scanned = engine.acquireFirstSlot(name, key, scan, once);
			if (scanned != null) {
				return scanned;
			}
			if (waits) {
				long left = Math.max(0, deadline - System.nanoTime());
				Duration wait = Duration.ofNanos(Math.min(left, slice / 2 + random.nextLong(slice)));
				slice = Math.max(SLICE.toNanos(), Math.min(slice * 2, engine.pollInterval().toNanos()));
				wake = (wake != null) ? wake : engine.slotWake(name, key, permits);
				Lease lease = engine.acquireSlot(name, key, waited, options.waitTime(wait), wake);
				if (lease != null) {
					return lease;
				}
				// SEM-8: a release of another slot ended the wait: that slot is tried once
				int released = wake.takeReleased();
				lease = (released >= 0) ? engine.acquireSlot(name, key, released, once) : null;
				if (lease != null) {
					return lease;
				}
			}
			if (!checked && checkNoSlotBeyond(engine, name, key, permits, options)) {
				checked = true;
				passed(engine, semaphoreKey, permits);
			}
			if (deadline - System.nanoTime() <= 0) {
				break;
			}
		}
		if (throwing) {
			boolean nested = LockContext.currentLease().filter((lease) -> lease.key().startsWith(semaphoreKey + "#"))
				.isPresent();
			throw new PermitNotAcquiredException(semaphoreKey, engine.shownKey(semaphoreKey), permits, waitTime, nested);
		}
		return null;
	}

	/**
	 * The index of the permit slot whose key {@code key} is ({@code <semaphore key>#<index>}, made by
	 * {@link dev.holdfast.core.LockKeys#encodeSlot}, not shortened); {@code null} for a lock's key.
	 */
	public static @Nullable Integer slotOf(String key) {
		return LockKeys.slotOf(key);
	}

	/**
	 * Checks that {@code permits} is 1 to {@value #MAX_PERMITS}.
	 * @throws IllegalArgumentException naming the semaphore and the fix otherwise
	 */
	public static int requirePermits(int permits, String name) {
		if (permits < 1 || permits > MAX_PERMITS) {
			throw new IllegalArgumentException("Semaphore '" + name + "' asks for " + permits + " permits: give it 1 to "
					+ MAX_PERMITS + " permits (each permit is a lease, and a waiting call tries each one)");
		}
		return permits;
	}

	/**
	 * The engine whose slot acquisitions never re-enter (SEM-3): permits are slots of Holdfast's engine.
	 * @throws UnsupportedOperationException naming the fix for a template of another kind
	 */
	private static LockEngine engineOf(LockTemplate template) {
		if (template instanceof LockEngine engine) {
			return engine;
		}
		throw new UnsupportedOperationException("The LockTemplate " + template.getClass().getName() + " takes no "
				+ "permits: they are slot leases of Holdfast's DefaultLockTemplate. Take them from that template, or "
				+ "override tryAcquirePermit and acquirePermit to delegate to it");
	}

	/**
	 * SEM-5: remembers the permits this engine gives the semaphore, failing a call that gives others.
	 * @return whether a check of slot {@code permits} passed less than {@link #CHECK_SLOT_LEASE} ago
	 */
	private static boolean remember(LockEngine engine, String semaphoreKey, int permits) {
		Use use;
		synchronized (USES) {
			use = uses(engine).putIfAbsent(semaphoreKey, new Use(permits, System.nanoTime()));
		}
		if (use != null && use.permits() != permits) {
			throw new IllegalArgumentException("Semaphore '" + engine.shownKey(semaphoreKey) + "' is given " + permits
					+ " permits here, but " + use.permits() + " by an earlier call in this application: together they "
					+ "would let more holders in than either allows. Give every use of one semaphore (annotations and "
					+ "LockTemplate calls) the same permits");
		}
		return use != null && use.checkedUntil() - System.nanoTime() > 0;
	}

	private static void passed(LockEngine engine, String semaphoreKey, int permits) {
		synchronized (USES) {
			uses(engine).put(semaphoreKey, new Use(permits, System.nanoTime() + CHECK_SLOT_LEASE.toNanos()));
		}
	}

	/** The uses of {@code engine}'s semaphores, at most {@link #REMEMBERED}; called holding {@link #USES}. */
	private static Map<String, Use> uses(LockEngine engine) {
		return USES.computeIfAbsent(engine, (e) -> new LinkedHashMap<>(16, 0.75f, true) {

			@Override
			protected boolean removeEldestEntry(Map.Entry<String, Use> eldest) {
				return size() > REMEMBERED;
			}

		});
	}

	/**
	 * SEM-5: slot {@code permits} is held only by an instance that gives the semaphore more
	 * permits, or by another call's check, which the check slot keeps out: a check takes the check
	 * slot (else it is left for the next round) for {@link #CHECK_SLOT_LEASE}, released only if the
	 * check fails, then
	 * slot {@code permits} for {@link #CHECK_LEASE}, waiting up to {@link #SLICE} for it (an attempt
	 * that missed a free slot, as a Redlock attempt without its quorum does, is retried in that
	 * time), and gives it back. Neither is renewed: whether the release of slot {@code permits}
	 * succeeds or not, it is free before the check slot is.
	 * @return whether the check was made
	 * @throws IllegalStateException if slot {@code permits} stayed held
	 */
	private static boolean checkNoSlotBeyond(LockEngine engine, String name, @Nullable Object key, int permits,
			LockOptions options) {
		LockOptions check = options.renew(false).waitTime(Duration.ZERO);
		Lease checking = engine.acquireSlot(name, key, CHECK_SLOT, check.leaseTime(CHECK_SLOT_LEASE));
		if (checking == null) {
			return false;
		}
		boolean passed = false;
		try {
			Lease beyond = engine.acquireSlot(name, key, permits, check.leaseTime(CHECK_LEASE).waitTime(SLICE));
			if (beyond == null) {
				String shown = engine.shownKey(engine.keyFor(name, key));
				throw new IllegalStateException("Semaphore '" + shown + "' has its permit slot #" + permits + " held, "
						+ "beyond the " + permits + " permits this call gives it: an instance gives it more permits (a "
						+ "permits change in a rolling deploy, or the slot of a crashed instance that did, free within "
						+ "one lease time), and together they let more than " + permits + " holders in. Give every "
						+ "instance the same permits for one semaphore");
			}
			beyond.close();
			passed = true;
			return true;
		}
		finally {
			if (passed) {
				((EngineLease) checking).forget();
			}
			else {
				checking.close();
			}
		}
	}

	/** The permits an engine gives a semaphore, and until when (monotonic nanoseconds) its check passed. */
	private record Use(int permits, long checkedUntil) {
	}

}
