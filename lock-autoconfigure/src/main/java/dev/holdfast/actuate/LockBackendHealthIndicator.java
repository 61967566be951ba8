package dev.holdfast.actuate;

import java.time.Duration;
import java.util.Map;
import java.util.TreeMap;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

import dev.holdfast.core.LockEngine;
import dev.holdfast.leader.DefaultLeaderElections;
import dev.holdfast.scheduling.TickClock;
import dev.holdfast.spi.BackendHealth;
import dev.holdfast.spi.LockBackend;

/**
 * Health of the lock backend: UP when it can serve locks, DOWN when it cannot be reached or
 * cannot serve them (Redlock below quorum), UNKNOWN when the backend cannot check itself (it
 * does not implement {@link BackendHealth}). Details: the backend name, how many leases this
 * instance holds, and what the backend reports.
 */
public class LockBackendHealthIndicator extends AbstractHealthIndicator {

	private final LockEngine engine;

	private final @Nullable TickClock tickClock;

	private final @Nullable DefaultLeaderElections elections;

	/**
	 * Checks the backend of {@code engine}.
	 */
	public LockBackendHealthIndicator(LockEngine engine) {
		this(engine, null, null);
	}

	/**
	 * Checks the backend of {@code engine}, and adds what {@code tickClock} measured: the
	 * detail {@code clockOffset} (this instance's clock less the backend's, e.g. {@code 2503ms},
	 * counting only what lies beyond the claim's round trip, so {@code 0ms} unless the clocks are
	 * known to differ) once a tick was claimed, and {@code jobsRefusedForClock} (job name to offset) while jobs run
	 * no ticks here because the offset exceeds their tolerance. The status does not change:
	 * locks still work. With {@code elections}, the detail {@code leaderGroups} (group to
	 * {@code leader} or {@code follower}); being a follower changes no status either.
	 */
	public LockBackendHealthIndicator(LockEngine engine, @Nullable TickClock tickClock,
			@Nullable DefaultLeaderElections elections) {
		super("Holdfast lock backend health check failed");
		this.engine = engine;
		this.tickClock = tickClock;
		this.elections = elections;
	}

	@Override
	protected void doHealthCheck(Health.Builder builder) {
		LockBackend backend = this.engine.backend();
		builder.withDetail("backend", backend.name()).withDetail("held", this.engine.heldLeases().size());
		if (this.tickClock != null) {
			this.tickClock.offset().ifPresent((offset) -> builder.withDetail("clockOffset", offset.toMillis() + "ms"));
			Map<String, Duration> refused = this.tickClock.refusedJobs();
			if (!refused.isEmpty()) {
				Map<String, String> offsets = new TreeMap<>();
				refused.forEach((job, offset) -> offsets.put(job, offset.toMillis() + "ms"));
				builder.withDetail("jobsRefusedForClock", offsets);
			}
		}
		if (this.elections != null && !this.elections.leaderships().isEmpty()) {
			Map<String, String> groups = new TreeMap<>();
			this.elections.leaderships()
				.forEach((leadership) -> groups.put(leadership.group(), leadership.isLeader() ? "leader" : "follower"));
			builder.withDetail("leaderGroups", groups);
		}
		if (!(backend instanceof BackendHealth health)) {
			builder.unknown();
			return;
		}
		BackendHealth.Check check = health.checkHealth();
		builder.withDetails(check.details());
		if (check.up()) {
			builder.up();
		}
		else {
			builder.down();
		}
	}

}
