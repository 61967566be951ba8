package dev.holdfast.semaphore;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

import org.jspecify.annotations.Nullable;

import dev.holdfast.AsyncLockTemplate;
import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.PermitNotAcquiredException;
import dev.holdfast.core.LockEngine;
import dev.holdfast.multi.KeySetLocking;

/**
 * Takes a permit of a semaphore through a {@link LockTemplate}'s single-key acquisitions: a
 * semaphore (name, key) of N permits is N locks, its permit slots {@code <key>#0} to
 * {@code <key>#N-1} (a form no (name, key) pair of a lock takes), and a permit is the lease of one
 * of them, with every rule of a lease (owner token, expiry by the backend's clock, renewal, loss,
 * the slot's fencing token). Rules SEM-1 to SEM-6 of docs/DESIGN.md:
 * <ul>
 * <li>each attempt tries every slot once, starting at a random one; the first free slot is the
 * permit (one backend round trip when it is the first tried);</li>
 * <li>when every slot is held, the call waits on one slot at a time for at most {@link #SLICE}
 * (woken by that slot's release events, or polling as the engine does), then tries every slot
 * again, until its wait time runs out;</li>
 * <li>permits are not reentrant: each acquisition takes a permit of its own, on any thread, as
 * {@link java.util.concurrent.Semaphore} does;</li>
 * <li>a call that finds every slot held checks once that slot N is free: a holder there uses the
 * semaphore with more permits, and the call fails naming the fix.</li>
 * </ul>
 */
public final class PermitSlots {

	/** The most permits of one semaphore: a call that finds them all held tries each one. */
	public static final int MAX_PERMITS = 64;

	/** How long a waiting call waits on one slot before it tries every slot again (jittered ±50%). */
	static final Duration SLICE = Duration.ofMillis(100);

	/** The slot that serializes the checks of slot N, so that one check never sees another's. */
	static final int CHECK_SLOT = -1;

	private PermitSlots() {
	}

	/**
	 * A permit of the semaphore of {@code permits} permits of (name, key), or {@code null} if none
	 * was free within the wait time and {@code throwing} is off.
	 * @param throwing whether a semaphore whose permits stay held throws a
	 * {@link PermitNotAcquiredException}
	 * @throws IllegalArgumentException if {@code permits} is not 1 to {@value #MAX_PERMITS}, or the
	 * wait time is unset and the template does not tell its default
	 * @throws IllegalStateException if another instance uses the semaphore with more permits
	 */
	public static @Nullable Lease acquire(LockTemplate template, String name, @Nullable Object key, int permits,
			LockOptions options, boolean throwing) {
		requirePermits(permits, name);
		LockEngine engine = engineOf(template);
		Duration waitTime = KeySetLocking.waitTime(template, options, "Taking a permit");
		long deadline = System.nanoTime() + waitTime.toNanos();
		LockOptions once = options.waitTime(Duration.ZERO);
		ThreadLocalRandom random = ThreadLocalRandom.current();
		int start = random.nextInt(permits);
		boolean checked = false;
		for (int round = 0;; round++) {
			for (int i = 0; i < permits; i++) {
				Lease lease = engine.acquireSlot(name, key, (start + i) % permits, once);
				if (lease != null) {
					return lease;
				}
			}
			if (!checked) {
				checked = checkNoSlotBeyond(engine, name, key, permits, once);
			}
			long left = deadline - System.nanoTime();
			if (left <= 0) {
				break;
			}
			long slice = Math.min(left, SLICE.toNanos() / 2 + random.nextLong(SLICE.toNanos()));
			Lease lease = engine.acquireSlot(name, key, (start + round) % permits,
					options.waitTime(Duration.ofNanos(slice)));
			if (lease != null) {
				return lease;
			}
		}
		if (throwing) {
			String semaphoreKey = keyOf(template, name, key);
			throw new PermitNotAcquiredException(semaphoreKey, shown(template, semaphoreKey), permits, waitTime);
		}
		return null;
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
	 * SEM-5: slot {@code permits} is held only by an instance that gives the semaphore more
	 * permits, or by another call's check, which the check slot keeps out: a check takes the check
	 * slot (else it is left for the next round), then slot {@code permits}, waiting up to
	 * {@link #SLICE} for it (an attempt that missed a free slot, as a Redlock attempt without its
	 * quorum does, is retried in that time), and gives it back, answered, before the check slot.
	 * @return whether the check was made
	 * @throws IllegalStateException if slot {@code permits} stayed held
	 */
	private static boolean checkNoSlotBeyond(LockEngine template, String name, @Nullable Object key,
			int permits, LockOptions once) {
		Lease check = template.acquireSlot(name, key, CHECK_SLOT, once);
		if (check == null) {
			return false;
		}
		try {
			Lease beyond = template.acquireSlot(name, key, permits, once.waitTime(SLICE));
			if (beyond == null) {
				throw new IllegalStateException("Semaphore '" + shown(template, keyOf(template, name, key))
						+ "' has its permit slot #" + permits + " held, beyond the " + permits + " permits this call "
						+ "gives it: another instance uses it with more permits, so together they let more than "
						+ permits + " holders in. Give every instance the same permits for one semaphore (one "
						+ "property, one constant)");
			}
			releaseAnswered(template, beyond);
			return true;
		}
		finally {
			check.close();
		}
	}

	private static void releaseAnswered(Object template, Lease lease) {
		if (template instanceof AsyncLockTemplate async) {
			// never completes exceptionally; bounded by the backend's network timeout
			async.releaseAsync(lease).toCompletableFuture().join();
		}
		else {
			lease.close();
		}
	}

	private static String keyOf(Object template, String name, @Nullable Object key) {
		if (template instanceof AsyncLockTemplate async) {
			try {
				return async.keyFor(name, key);
			}
			catch (UnsupportedOperationException ex) {
				// a template that does not tell its keys
			}
		}
		return (key != null) ? name + ":" + key : name;
	}

	private static String shown(Object template, String key) {
		return (template instanceof AsyncLockTemplate async) ? async.shownKey(key) : key;
	}

}
