package dev.holdfast.core;

import org.jspecify.annotations.Nullable;

/**
 * One waiting permit call's handle in its engine's {@link SlotWakes} (SEM-8 in docs/DESIGN.md):
 * given to each slice's {@link LockEngine#acquireSlot(String, Object, int, dev.holdfast.LockOptions, SlotWake)},
 * which registers it while it waits; a release of another slot of its semaphore ends that wait
 * early and leaves the slot's index here, for the call to try once.
 */
public final class SlotWake {

	final SlotWakes registry;

	/** The keys of the semaphore's slots, {@code #0} to {@code #N-1}, by index. */
	final String[] slotKeys;

	/** When the call started: the oldest registered call is woken first. */
	final long since = System.nanoTime();

	/** The released slot this call was woken for, or -1; guarded by the registry. */
	int released = -1;

	/** Whether a wake is pending: the slice in progress ends at its next pause. */
	volatile boolean woken;

	/** The slice's acquisition while it is registered. */
	volatile @Nullable Acquisition current;

	SlotWake(SlotWakes registry, String[] slotKeys) {
		this.registry = registry;
		this.slotKeys = slotKeys;
	}

	/** The index of the released slot this call was woken for, or -1; the wake is used up. */
	public int takeReleased() {
		return this.registry.take(this);
	}

	int indexOf(String key) {
		for (int i = 0; i < this.slotKeys.length; i++) {
			if (this.slotKeys[i].equals(key)) {
				return i;
			}
		}
		return -1;
	}

}
