package dev.holdfast.core;

import java.util.List;

import dev.holdfast.LockListener;

/** Guards a single listener: see {@link CompositeLockListener}. */
final class GuardedLockListener {

	private GuardedLockListener() {
	}

	/** {@code listener} with its failures logged and ignored. */
	static LockListener of(LockListener listener) {
		return CompositeLockListener.of(List.of(listener));
	}

}
