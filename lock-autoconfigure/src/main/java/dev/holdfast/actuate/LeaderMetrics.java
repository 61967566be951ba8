package dev.holdfast.actuate;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;

import dev.holdfast.leader.DefaultLeaderElections;

/**
 * The gauge {@code holdfast.leader.is_leader} per group joined (tags {@code group},
 * {@code backend}): 1 while this instance leads the group, 0 otherwise. Groups are few (the
 * application names them), so the tag is bounded.
 */
public final class LeaderMetrics {

	public LeaderMetrics(MeterRegistry registry, DefaultLeaderElections elections, String backend) {
		register(registry, elections, backend);
	}

	/** Registers the gauge of every group {@code elections} joins, tagged {@code backend}. */
	public static void register(MeterRegistry registry, DefaultLeaderElections elections, String backend) {
		elections.onJoin((leadership) -> Gauge
			.builder("holdfast.leader.is_leader", leadership, (joined) -> joined.isLeader() ? 1 : 0)
			.description("Whether this instance leads the group (1) or not (0)")
			.tag("group", leadership.group())
			.tag("backend", backend)
			.register(registry));
	}

}
