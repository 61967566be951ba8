package dev.holdfast.actuate;

import java.util.concurrent.ConcurrentHashMap;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

import org.springframework.context.ApplicationListener;

import dev.holdfast.LeadershipEvent;
import dev.holdfast.LeadershipGrantedEvent;
import dev.holdfast.LeadershipRevokedEvent;

/**
 * An Observation {@value #TERM} for each leader term of this instance, from the leadership
 * application events: started at the grant, stopped at the revocation. Low-cardinality keys
 * {@code group}, {@code backend} and, once revoked, {@code reason} ({@code yielded}, {@code lost},
 * {@code backend_unreachable}, {@code shutdown}); high-cardinality {@code fencing.token}. A
 * term's events arrive in order on one thread (LDR-4), so a group has one open observation at a
 * time; the map holds one entry per group led now.
 */
public class LeaderTermObservations implements ApplicationListener<LeadershipEvent> {

	/** The name of a term's observation. */
	public static final String TERM = "holdfast.leader.term";

	private final ObservationRegistry registry;

	private final String backend;

	/** The open observation of each group this instance leads, by group. */
	private final ConcurrentHashMap<String, Observation> open = new ConcurrentHashMap<>();

	public LeaderTermObservations(ObservationRegistry registry, String backend) {
		this.registry = registry;
		this.backend = backend;
	}

	@Override
	public void onApplicationEvent(LeadershipEvent event) {
		if (event instanceof LeadershipGrantedEvent) {
			Observation term = Observation.createNotStarted(TERM, this.registry)
				.contextualName("leader term " + event.getGroup())
				.lowCardinalityKeyValue("group", event.getGroup())
				.lowCardinalityKeyValue("backend", this.backend)
				.highCardinalityKeyValue("fencing.token", Long.toString(event.getTerm().fencingToken()))
				.start();
			Observation previous = this.open.put(event.getGroup(), term);
			if (previous != null) {
				// Not expected (a revocation comes before any later grant): do not leak it.
				previous.stop();
			}
		}
		else if (event instanceof LeadershipRevokedEvent revoked) {
			Observation term = this.open.remove(event.getGroup());
			if (term != null) {
				term.lowCardinalityKeyValue("reason", LeaderTermMetrics.reason(revoked)).stop();
			}
		}
	}

}
