package dev.holdfast.core;

import java.util.concurrent.CompletionException;

import dev.holdfast.LockBackendException;
import dev.holdfast.LockInterruptedException;

/**
 * How the engine shows keys and backend failures: keys masked as {@link LockSettings#shown}
 * says, also where a backend's message quoted them, and failures as
 * {@link LockBackendException}s that name the backend, the operation and the key.
 */
final class Failures {

	private final String backendName;

	private final LockSettings settings;

	Failures(String backendName, LockSettings settings) {
		this.backendName = backendName;
		this.settings = settings;
	}

	String backendName() {
		return this.backendName;
	}

	/** {@code key} as logs and messages show it. */
	String shown(String key) {
		return this.settings.shown(key);
	}

	/**
	 * {@code failure} as the caller gets it: a {@link LockInterruptedException} (its cause an
	 * {@link InterruptedException} caused by the failure) when the thread is interrupted, whose flag
	 * stays set, as a blocking acquisition's interrupted call gives; else {@code failure} itself.
	 */
	RuntimeException interruptedOr(LockBackendException failure, String key) {
		if (!Thread.currentThread().isInterrupted()) {
			return failure;
		}
		InterruptedException interrupted = new InterruptedException(failure.getMessage());
		interrupted.initCause(failure);
		return new LockInterruptedException(shown(key), interrupted);
	}

	/**
	 * The exception a caller gets for a backend failure: a {@link LockBackendException} whose
	 * message shows {@code key} as {@link #shown} does, also where the backend's message quoted it.
	 */
	LockBackendException of(Throwable failure, String what, String key) {
		Throwable ex = (failure instanceof CompletionException && failure.getCause() != null) ? failure.getCause()
				: failure;
		String shownKey = shown(key);
		if (ex instanceof LockBackendException backendException) {
			String message = String.valueOf(backendException.getMessage());
			if (shownKey.equals(key) || !message.contains(key)) {
				return backendException;
			}
			LockBackendException masked = new LockBackendException(message.replace(key, shownKey),
					backendException.getCause());
			masked.setStackTrace(backendException.getStackTrace());
			return masked;
		}
		String message = String.valueOf(ex.getMessage()).replace(key, shownKey);
		return new LockBackendException(
				"The " + this.backendName + " backend failed to " + what + " lock '" + shownKey + "': " + message, ex);
	}

}
