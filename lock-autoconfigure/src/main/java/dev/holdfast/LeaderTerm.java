package dev.holdfast;

import java.time.Instant;

/**
 * One term of leadership of a group: from its grant to its revocation, this instance held the
 * group's lease on the backend.
 */
public interface LeaderTerm {

	/** The group's name. */
	String group();

	/** When the term was granted (this JVM's wall clock, for display only). */
	Instant since();

	/**
	 * The term's fencing token: strictly larger than the token of every earlier term of the
	 * group, on every backend (the lease's fencing token). Pass it to the resource the leader
	 * writes, so that it rejects writes of an earlier leader that paused past its term.
	 */
	long fencingToken();

	/**
	 * Whether the term still holds: not revoked, and its lease valid by the same monotonic-clock
	 * rule as {@link Lease#isValid()}.
	 */
	boolean isValid();

}
