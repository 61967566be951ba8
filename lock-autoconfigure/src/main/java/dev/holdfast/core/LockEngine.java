package dev.holdfast.core;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.function.Supplier;

import org.jspecify.annotations.Nullable;

import dev.holdfast.HeldLeases;
import dev.holdfast.Lease;
import dev.holdfast.LeaseInfo;
import dev.holdfast.LockOptions;
import dev.holdfast.spi.LockBackend;

/**
 * Holdfast's lock engine as the scheduler and the operations support see it: its backend, its
 * key encoding and wall clock, its list of held leases, and the leases of scheduled jobs (taken
 * once, renewed up to a limit, forgotten rather than released when kept past their run) and the
 * permit slots of semaphores. {@link DefaultLockTemplate} implements it.
 */
public interface LockEngine extends HeldLeases {

	/** The backend the engine uses. */
	LockBackend backend();

	/** The backend key of a lock, {@code <prefix><name>[:<encoded key>]}. */
	String keyFor(String name, @Nullable Object key);

	/** The prefix of every backend key the engine makes. */
	String keyPrefix();

	/** The engine's timer and worker threads (REN-1, LDR-9). */
	EngineThreads threads();

	/** The wall clock of {@code acquiredAt}/{@code expiresAt}, for display only. */
	Clock clock();

	/**
	 * Lists a lock that this process took on the engine's backend without the engine (a
	 * scheduled job's lock) among the {@link #heldLeases()}, until the returned action runs.
	 * @param lock describes the lock each time the leases are listed
	 * @return the action that removes the lock from the list
	 */
	Runnable listHeld(Supplier<LeaseInfo> lock);

	/**
	 * Acquires a lock with the engine's owner tokens, waiting, renewal and listing, or returns
	 * {@code null} if it stayed held for the wait time. A scheduled job takes its lock so: one
	 * attempt, {@linkplain EngineLease#renewAtMostFor renewed up to lockAtMostFor}. The lease is an
	 * {@link EngineLease}, so a lock that outlives the code that took it can be {@linkplain
	 * EngineLease#forget() forgotten} instead of released, or {@linkplain EngineLease#markLost marked lost}.
	 * @throws dev.holdfast.LockBackendException if the backend failed
	 * @throws dev.holdfast.LockInterruptedException if the thread was interrupted while waiting
	 */
	@Nullable Lease acquireOrNull(String name, @Nullable Object key, LockOptions options);

	/**
	 * {@link #acquireOrNull} of permit slot {@code slot} of the semaphore (name, key), a key no lock has
	 * ({@link LockKeys#encodeSlot}): always a new lease, never a reentrant hold, bound to no thread (SEM-1, SEM-3).
	 */
	@Nullable Lease acquireSlot(String name, @Nullable Object key, int slot, LockOptions options);

	/**
	 * {@link #acquireSlot(String, Object, int, LockOptions)} for a permit call's wait on one slot, which
	 * also ends early, returning {@code null}, when a release of another slot of the semaphore woke
	 * {@code wake} (SEM-8): {@link SlotWake#takeReleased()} then names that slot. The default ignores
	 * {@code wake}: the wait lasts its slice.
	 */
	default @Nullable Lease acquireSlot(String name, @Nullable Object key, int slot, LockOptions options,
			@Nullable SlotWake wake) {
		return acquireSlot(name, key, slot, options);
	}

	/**
	 * A waiting permit call's handle for {@link #acquireSlot(String, Object, int, LockOptions, SlotWake)}
	 * (SEM-8). The default is a handle no release wakes.
	 */
	default SlotWake slotWake(String name, @Nullable Object key, int permits) {
		return new SlotWakes().wake(new String[0]);
	}

	/**
	 * The lease of the first of permit slots {@code slots} of the semaphore (name, key) that
	 * {@link #acquireSlot} with {@code options} takes, in their order, or {@code null}: here one
	 * {@code acquireSlot} after another; Holdfast's engine tries them in one backend call where it
	 * can (SEM-7).
	 */
	default @Nullable Lease acquireFirstSlot(String name, @Nullable Object key, List<Integer> slots,
			LockOptions options) {
		for (int slot : slots) {
			Lease lease = acquireSlot(name, key, slot, options);
			if (lease != null) {
				return lease;
			}
		}
		return null;
	}

	/**
	 * The leases of {@code keys} (backend keys of {@code name}) taken in one backend call, a try-once of each
	 * ({@link dev.holdfast.spi.KeySetAcquisition}, MKY-6), each as {@link #acquireOrNull} gives it; {@code null},
	 * nothing taken, when refused, when the backend cannot now, or when a key has a lease of this template or a
	 * local waiter.
	 * @throws dev.holdfast.LockBackendException if the backend failed
	 */
	@Nullable List<Lease> acquireAllAtOnce(String name, List<String> keys, LockOptions options);

	/** The wait time of an acquisition with {@code options}: theirs, else the engine's default. */
	Duration waitTime(LockOptions options);

	/** The longest pause between two attempts of a waiter. */
	Duration pollInterval();

	/** {@code key} as logs and messages show it: its key part masked unless key values are shown. */
	String shownKey(String key);

	/** The lease time of an acquisition with {@code options}: theirs, else the engine's default. */
	Duration leaseTime(LockOptions options);

}
