package dev.holdfast;

import org.jspecify.annotations.Nullable;

/**
 * The lock backend could not be reached or answered with an error. The guarded code did not
 * run: Holdfast fails closed.
 */
public class LockBackendException extends LockException {

	public LockBackendException(String message, @Nullable Throwable cause) {
		super(message, cause);
	}

}
