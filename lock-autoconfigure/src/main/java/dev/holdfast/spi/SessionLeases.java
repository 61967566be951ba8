package dev.holdfast.spi;

/**
 * A backend whose locks live with a client session (ZooKeeper's ephemeral nodes) as well as with
 * their time to live. It can say at once, without a round trip, that no lock of this process can
 * be trusted now (the connection is suspended), and it reports the locks it knows lost (the
 * session expired) as soon as it learns of them.
 */
public interface SessionLeases {

	/**
	 * Whether the backend cannot vouch for the locks of this process now, for example while its
	 * connection is suspended: the engine counts every lease as not valid meanwhile. Answered
	 * from local state, without a round trip.
	 */
	boolean suspended();

	/**
	 * Calls {@code listener} for each lock of this process that the backend knows lost. The
	 * listener must not block.
	 * @return a handle that stops the calls when closed
	 */
	AutoCloseable onLost(LostListener listener);

	/**
	 * How long from now, at most, the backend still vouches for the locks of this process
	 * whatever their time to live (a session's bound): 0 while {@link #suspended()}. Answered from
	 * local state.
	 */
	default long vouchedNanos() {
		return suspended() ? 0 : Long.MAX_VALUE;
	}

	/**
	 * Calls {@code listener} each time the backend stops vouching for the locks of this process
	 * (a connection suspended or lost). The listener must not block.
	 * @return a handle that stops the calls when closed
	 */
	default AutoCloseable onSuspended(Runnable listener) {
		return () -> {
		};
	}

	/** Told of a lock that is lost. */
	@FunctionalInterface
	interface LostListener {

		/**
		 * @param key the lock's backend key
		 * @param owner the owner token of the lost acquisition
		 * @param reason why the lock is lost, for the log
		 */
		void lost(String key, String owner, String reason);

	}

}
