package dev.holdfast.spi;

import java.util.function.Consumer;

/**
 * A backend that tells when a lock is released, so that waiters wake promptly instead of
 * polling. Delivery is best effort: the engine still polls, slowly, as a fallback.
 */
public interface ReleaseEvents {

	/**
	 * Calls {@code listener} with the key of released locks, from any owner in the cluster: at
	 * least of every lock released after an acquisition attempt failed on it while it was held
	 * (a backend may leave out releases nobody waited for). The listener must not block. The
	 * call should not wait for the network: a backend may open its subscription in the
	 * background, and deliveries start once it listens.
	 * @return a handle that stops the deliveries when closed
	 */
	AutoCloseable subscribe(Consumer<String> listener);

	/**
	 * Whether deliveries to subscribers have started: {@code false} while a subscription opened
	 * in the background does not listen yet, or after it was lost until it listens again. Lets
	 * the engine tell when it is ready at startup; a backend whose deliveries start when
	 * {@link #subscribe} returns keeps the default.
	 */
	default boolean isListening() {
		return true;
	}

	/**
	 * Whether this backend announces releases now. {@code false} where it cannot (a database
	 * without notifications, a driver that does not expose them) or while its listening connection
	 * is lost: the engine then waits as on a backend without release events (short polling
	 * pauses, every racer attempting) and subscribes once this turns {@code true}. Read before
	 * every wait, so it should be cheap; the default announces always.
	 */
	default boolean announcesReleases() {
		return true;
	}

}
