package dev.holdfast;

/**
 * This instance leads a group from now on, for the {@linkplain #getTerm() term} granted. On each
 * instance, the revocation of a term is delivered before any later grant of the group.
 */
public final class LeadershipGrantedEvent extends LeadershipEvent {

	public LeadershipGrantedEvent(Leadership leadership, LeaderTerm term) {
		super(leadership, term);
	}

	@Override
	public String toString() {
		return "LeadershipGrantedEvent[" + getGroup() + ", token " + getTerm().fencingToken() + "]";
	}

}
