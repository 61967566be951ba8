package dev.holdfast.core;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.jspecify.annotations.Nullable;

/**
 * One template's registry of waiting permit calls, per semaphore (SEM-8 in docs/DESIGN.md): a
 * release event of a slot that no local acquisition waits in the line of wakes the oldest call of
 * its semaphore not woken yet, whose slice then ends and which tries that slot once. Additive to
 * the lines: each call still waits in its slot's line. A semaphore is here only while one of its
 * calls is registered (each of its slot keys mapping to its calls); no I/O under the lock.
 */
final class SlotWakes {

	/** Per slot key, the registered calls of its semaphore, oldest first (one list per semaphore). */
	private final Map<String, List<SlotWake>> bySlot = new HashMap<>();

	/** A new handle for a waiting call of the semaphore whose slots are {@code slotKeys}. */
	SlotWake wake(String[] slotKeys) {
		return new SlotWake(this, slotKeys);
	}

	/** Registers {@code wake} while {@code slice}, its wait on one slot, waits. */
	synchronized void enter(SlotWake wake, Acquisition slice) {
		wake.current = slice;
		List<SlotWake> calls = this.bySlot.get(wake.slotKeys[0]);
		if (calls == null) {
			calls = new ArrayList<>(2);
			for (String key : wake.slotKeys) {
				this.bySlot.put(key, calls);
			}
		}
		int at = calls.size();
		while (at > 0 && calls.get(at - 1).since - wake.since > 0) {
			at--;
		}
		calls.add(at, wake);
	}

	/**
	 * Unregisters {@code wake} when its slice ends; a wake it will not use ({@code passOn}: its slice
	 * took its own slot, or ended by interrupt, drain or a backend failure) passes to the next call.
	 */
	void leave(SlotWake wake, boolean passOn) {
		Acquisition next;
		synchronized (this) {
			wake.current = null;
			List<SlotWake> calls = this.bySlot.get(wake.slotKeys[0]);
			if (calls == null || !calls.remove(wake)) {
				return;
			}
			if (calls.isEmpty()) {
				for (String key : wake.slotKeys) {
					this.bySlot.remove(key);
				}
			}
			if (!passOn || wake.released < 0) {
				return;
			}
			int released = wake.released;
			wake.released = -1;
			wake.woken = false;
			next = wakeOldest(calls, released);
		}
		if (next != null) {
			next.wake();
		}
	}

	/**
	 * A release of {@code key} reached this template and no local acquisition waits in its line:
	 * if it is a slot of a semaphore with registered calls, the oldest not woken yet is woken.
	 */
	void released(String key) {
		Acquisition slice;
		synchronized (this) {
			List<SlotWake> calls = this.bySlot.get(key);
			if (calls == null) {
				return;
			}
			slice = wakeOldest(calls, calls.get(0).indexOf(key));
		}
		if (slice != null) {
			slice.wake();
		}
	}

	/** Marks the oldest call not woken yet as woken for slot {@code index}: its slice, to wake. */
	private static @Nullable Acquisition wakeOldest(List<SlotWake> calls, int index) {
		for (SlotWake call : calls) {
			if (call.released < 0) {
				call.released = index;
				call.woken = true;
				return call.current;
			}
		}
		return null;
	}

	synchronized int take(SlotWake wake) {
		int released = wake.released;
		wake.released = -1;
		wake.woken = false;
		return released;
	}

	/** How many slot keys have registered calls (for tests). */
	synchronized int size() {
		return this.bySlot.size();
	}

}
