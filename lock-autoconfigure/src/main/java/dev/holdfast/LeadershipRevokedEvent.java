package dev.holdfast;

/**
 * This instance no longer leads a group: the {@linkplain #getTerm() term} ended, for
 * {@linkplain #getReason() a reason}. Delivered no later than the end of the term's lease
 * validity (by this JVM's monotonic clock, plus the scheduler's delay), even when the backend
 * cannot be reached; {@link Leadership#isLeader()} is false from that validity end on.
 */
public final class LeadershipRevokedEvent extends LeadershipEvent {

	/** Why a term ended. */
	public enum Reason {

		/** {@link Leadership#yield()}: given up so that another instance leads. */
		YIELDED,

		/** The backend no longer vouches for the term's lease: renewal refused, or the lease lost. */
		LOST,

		/** The lease could not be renewed within its validity: the backend did not answer. */
		BACKEND_UNREACHABLE,

		/** The leadership was closed, or the application is stopping. */
		SHUTDOWN

	}

	private final Reason reason;

	public LeadershipRevokedEvent(Leadership leadership, LeaderTerm term, Reason reason) {
		super(leadership, term);
		this.reason = reason;
	}

	/** Why the term ended. */
	public Reason getReason() {
		return this.reason;
	}

	@Override
	public String toString() {
		return "LeadershipRevokedEvent[" + getGroup() + ", token " + getTerm().fencingToken() + ", " + this.reason
				+ "]";
	}

}
