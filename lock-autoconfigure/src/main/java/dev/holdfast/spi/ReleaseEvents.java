package dev.holdfast.spi;

import java.util.function.Consumer;

/**
 * A backend that tells when a lock is released, so that waiters wake promptly instead of
 * polling. Delivery is best effort: the engine still polls, slowly, as a fallback.
 */
public interface ReleaseEvents {

	/**
	 * Calls {@code listener} with the key of every released lock, from any owner in the
	 * cluster. The listener must not block.
	 * @return a handle that stops the deliveries when closed
	 */
	AutoCloseable subscribe(Consumer<String> listener);

}
