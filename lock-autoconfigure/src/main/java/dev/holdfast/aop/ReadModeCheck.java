package dev.holdfast.aop;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.core.LockEngine;
import dev.holdfast.scan.BackendChoice;
import dev.holdfast.spi.SharedLocks;

/**
 * The startup check of {@code mode = READ} on an annotated method, for the
 * {@link LockOperationSource}: a read hold that cannot be served fails the application context,
 * naming what to change (RWL-9, RWL-10).
 */
final class ReadModeCheck {

	private ReadModeCheck() {
	}

	/**
	 * A {@code mode = READ} that cannot be served fails at startup, naming what to change (RWL-9,
	 * RWL-10): on a reactive or suspend method, with several keys, or on a backend without read
	 * holds (the backend the annotation names, or the default one).
	 */
	static void check(BackendChoice<?> backends, LockAnnotation annotation, String where, boolean reactive) {
		if (reactive) {
			throw new LockConfigurationException(where + " has mode = READ, which a method returning a reactive type "
					+ "or a Kotlin suspend function cannot use yet",
					"Use mode = WRITE, or take the read hold with LockTemplate.acquire(name, key, "
							+ "LockOptions.defaults().mode(LockMode.READ)) on a thread that may block, or return a "
							+ "CompletableFuture.");
		}
		if (annotation.keys().length > 0) {
			throw new LockConfigurationException(where + " has mode = READ with keys, which several keys cannot use yet",
					"Use one key with mode = READ, or mode = WRITE for several keys.");
		}
		Object chosen = backends.get(annotation.backend());
		if (chosen instanceof LockEngine engine && !(engine.backend() instanceof SharedLocks)) {
			throw new LockConfigurationException(where + " has mode = READ, but " + SharedLocks.unsupportedBy(engine.backend()),
					"Use mode = WRITE, or lock on a backend that gives read holds (backend = \"...\").");
		}
	}

}
