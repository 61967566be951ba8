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
	 * (a backend may leave out releases nobody waited for). A backend that also announces every
	 * release of a permit slot's key ({@code <semaphore key>#<index>}) wakes a permit call waiting
	 * on another slot of its semaphore (SEM-8); one that does not leaves it to its slices. The
	 * listener must not block. The
	 * call should not wait for the network: a backend may open its subscription in the
	 * background, and deliveries start once it listens.
	 * @return a handle that stops the deliveries when closed
	 */
	AutoCloseable subscribe(Consumer<String> listener);

	/**
	 * Subscribes as {@link #subscribe(Consumer)} does, and calls {@code onInterrupted} whenever
	 * deliveries stop (the backend's listening connection was lost, or it stopped listening), so
	 * that waiters asleep for an announcement that can no longer come look again now (and read
	 * {@link #announcesReleases()}). {@code onInterrupted} must not block. The default never calls
	 * it: for a backend whose deliveries do not stop, or that cannot tell.
	 * @return a handle that stops the deliveries when closed
	 */
	default AutoCloseable subscribe(Consumer<String> listener, Runnable onInterrupted) {
		return subscribe(listener);
	}

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
