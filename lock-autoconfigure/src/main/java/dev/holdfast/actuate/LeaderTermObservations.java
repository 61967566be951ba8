package dev.holdfast.actuate;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

import org.springframework.context.ApplicationListener;

import dev.holdfast.Leadership;
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

	private final Function<Leadership, String> backends;

	/** The open observation of each group this instance leads, by its leadership (one per group and backend). */
	private final ConcurrentHashMap<Leadership, Observation> open = new ConcurrentHashMap<>();

	public LeaderTermObservations(ObservationRegistry registry, String backend) {
		this(registry, (leadership) -> backend);
	}

	/**
	 * @param backends the name of the backend a group is elected on, for the {@code backend} tag
	 */
	public LeaderTermObservations(ObservationRegistry registry, Function<Leadership, String> backends) {
		this.registry = registry;
		this.backends = backends;
	}

	@Override
	public void onApplicationEvent(LeadershipEvent event) {
		if (event instanceof LeadershipGrantedEvent) {
			Observation term = Observation.createNotStarted(TERM, this.registry)
				.contextualName("leader term " + event.getGroup())
				.lowCardinalityKeyValue("group", event.getGroup())
				.lowCardinalityKeyValue("backend", this.backends.apply(event.getLeadership()))
				.highCardinalityKeyValue("fencing.token", Long.toString(event.getTerm().fencingToken()))
				.start();
			Observation previous = this.open.put(event.getLeadership(), term);
			if (previous != null) {
				// Not expected (a revocation comes before any later grant): do not leak it.
				previous.stop();
			}
		}
		else if (event instanceof LeadershipRevokedEvent revoked) {
			Observation term = this.open.remove(event.getLeadership());
			if (term != null) {
				term.lowCardinalityKeyValue("reason", LeaderTermMetrics.reason(revoked)).stop();
			}
		}
	}

}
