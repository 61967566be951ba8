package dev.holdfast;

import org.springframework.context.ApplicationEvent;

/**
 * A change of this instance's leadership of a group: {@link LeadershipGrantedEvent} or
 * {@link LeadershipRevokedEvent}. Published as Spring application events, and to the
 * {@linkplain Leadership#addListener listeners} of the {@link Leadership}, which is the source.
 */
public abstract sealed class LeadershipEvent extends ApplicationEvent
		permits LeadershipGrantedEvent, LeadershipRevokedEvent {

	private final LeaderTerm term;

	LeadershipEvent(Leadership leadership, LeaderTerm term) {
		super(leadership);
		this.term = term;
	}

	/** The leadership that changed. */
	public Leadership getLeadership() {
		return (Leadership) getSource();
	}

	/** The group's name. */
	public String getGroup() {
		return this.term.group();
	}

	/** The term granted or revoked. */
	public LeaderTerm getTerm() {
		return this.term;
	}

}
