package dev.holdfast;

import org.jspecify.annotations.Nullable;

/**
 * Base class of the exceptions Holdfast throws.
 */
public abstract class LockException extends RuntimeException {

	protected LockException(String message, @Nullable Throwable cause) {
		super(message, cause);
	}

}
