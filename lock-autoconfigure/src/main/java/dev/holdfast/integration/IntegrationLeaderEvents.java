package dev.holdfast.integration;

import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.ApplicationListener;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.event.OnGrantedEvent;
import org.springframework.integration.leader.event.OnRevokedEvent;

import dev.holdfast.LeaderTerm;
import dev.holdfast.Leadership;
import dev.holdfast.LeadershipEvent;
import dev.holdfast.LeadershipGrantedEvent;
import dev.holdfast.LeadershipRevokedEvent;

/**
 * Publishes every {@link LeadershipGrantedEvent} again as Spring Integration's
 * {@link OnGrantedEvent}, and every {@link LeadershipRevokedEvent} as its {@link OnRevokedEvent},
 * with the group as the role and the {@link Leadership} as the source, right after the Holdfast
 * event and on the same thread, in the same order (LDR-4). So the listeners and the
 * {@code SmartLifecycleRoleController} of an application written for
 * {@code LockRegistryLeaderInitiator} work on Holdfast's leader election unchanged.
 * <p>
 * The events' {@link Context}: {@link Context#getRole()} is the group,
 * {@link Context#isLeader()} whether this instance leads the group now, and
 * {@link Context#yield()} yields the term of the event (nothing when that term is over already,
 * so a late call does not end a later term).
 */
public class IntegrationLeaderEvents implements ApplicationListener<LeadershipEvent> {

	private final ApplicationEventPublisher publisher;

	public IntegrationLeaderEvents(ApplicationEventPublisher publisher) {
		this.publisher = publisher;
	}

	@Override
	public void onApplicationEvent(LeadershipEvent event) {
		Leadership leadership = event.getLeadership();
		Context context = new TermContext(leadership, event.getTerm());
		if (event instanceof LeadershipGrantedEvent) {
			this.publisher.publishEvent(new OnGrantedEvent(leadership, context, event.getGroup()));
		}
		else if (event instanceof LeadershipRevokedEvent) {
			this.publisher.publishEvent(new OnRevokedEvent(leadership, context, event.getGroup()));
		}
	}

	/** Spring Integration's view of one term. */
	private record TermContext(Leadership leadership, LeaderTerm term) implements Context {

		@Override
		public boolean isLeader() {
			return this.leadership.isLeader();
		}

		@Override
		public void yield() {
			long token = this.term.fencingToken();
			if (this.leadership.term().filter((current) -> current.fencingToken() == token).isPresent()) {
				this.leadership.yield();
			}
		}

		@Override
		public String getRole() {
			return this.leadership.group();
		}

		@Override
		public String toString() {
			return "Holdfast leadership of '" + this.leadership.group() + "', term " + this.term.fencingToken();
		}

	}

}
