package dev.holdfast.core;

import java.util.List;

import dev.holdfast.LockListener;

/** Guards a single listener as {@link CompositeLockListener} guards each of its listeners. */
final class GuardedLockListener {

	private GuardedLockListener() {
	}

	static LockListener of(LockListener listener) {
		return CompositeLockListener.of(List.of(listener));
	}

}
