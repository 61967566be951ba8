package dev.holdfast;

import java.time.Duration;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * This instance's membership of one leader group: a follower campaigns, and is granted a
 * {@link LeaderTerm} while it holds the group's lease on the backend. A term ends (is revoked)
 * when the instance yields, leaves, cannot renew the lease within its validity, or finds it lost.
 */
public interface Leadership extends AutoCloseable {

	/** The group's name. */
	String group();

	/**
	 * Whether this instance leads the group now: a term was granted and its lease is still valid
	 * by this JVM's monotonic clock. Turns false the moment the lease's validity ends, before
	 * the revoked event is delivered.
	 */
	boolean isLeader();

	/** The current term while {@link #isLeader()}, else empty. */
	Optional<LeaderTerm> term();

	/**
	 * Waits until this instance leads the group, at most {@code timeout}.
	 * @return the term, or empty if it was not granted within the timeout or the leadership was
	 * closed
	 * @throws InterruptedException if the thread was interrupted while waiting
	 */
	Optional<LeaderTerm> awaitLeadership(Duration timeout) throws InterruptedException;

	/**
	 * Gives the current term up (revoked with {@link LeadershipRevokedEvent.Reason#YIELDED}) and
	 * releases the lease, so that another instance leads; this instance does not campaign again
	 * for a second (or two poll intervals, if longer). Does nothing when not leading.
	 */
	void yield();

	/**
	 * Calls {@code listener} with every grant and revocation of this group on this instance, in
	 * order, on Holdfast's event-delivery thread; at once with the current term's grant if a term is
	 * current. The listener must return promptly: the next events wait for it.
	 * @return closing it removes the listener
	 */
	AutoCloseable addListener(Consumer<? super LeadershipEvent> listener);

	/**
	 * Leaves the group: a current term is revoked ({@link LeadershipRevokedEvent.Reason#SHUTDOWN})
	 * and its lease released; the campaign stops for good.
	 */
	@Override
	void close();

}
