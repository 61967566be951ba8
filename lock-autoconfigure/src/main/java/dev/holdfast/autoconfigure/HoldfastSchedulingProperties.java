package dev.holdfast.autoconfigure;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * Defaults of {@code @SingleInstanceScheduled} jobs.
 */
@ConfigurationProperties("holdfast.scheduling")
public class HoldfastSchedulingProperties {

	/**
	 * Whether methods annotated with @SingleInstanceScheduled are scheduled.
	 */
	private boolean enabled = true;

	/**
	 * Longest time one run holds its job's lock when the annotation does not say, even if it
	 * hangs: the lock is renewed (holdfast.lease-time) until then. Set it above the longest run.
	 */
	private Duration lockAtMostFor = Duration.ofMinutes(10);

	/**
	 * Shortest time a job's lock is kept after the start of a run when the annotation does not
	 * say.
	 */
	private Duration lockAtLeastFor = Duration.ZERO;

	/**
	 * Time zone of cron jobs whose annotation sets none, the same on every instance, such as
	 * 'Europe/Paris' or 'UTC'. When unset, such jobs use UTC if that is the JVM's default zone,
	 * and fail at startup otherwise: instances in different default zones would run different
	 * ticks.
	 */
	private @Nullable String zone;

	/**
	 * How far from a tick the lock backend's clock may be when an instance claims it, at most a
	 * quarter of the time to the next tick. An instance whose clock is further off the backend's
	 * runs no ticks until it agrees again; a run that starts later than this after its tick is
	 * dropped on that instance.
	 */
	private Duration clockTolerance = Duration.ofSeconds(1);

	public @Nullable String getZone() {
		return this.zone;
	}

	public void setZone(@Nullable String zone) {
		this.zone = zone;
	}

	public Duration getClockTolerance() {
		return this.clockTolerance;
	}

	public void setClockTolerance(Duration clockTolerance) {
		this.clockTolerance = clockTolerance;
	}

	public boolean isEnabled() {
		return this.enabled;
	}

	public void setEnabled(boolean enabled) {
		this.enabled = enabled;
	}

	public Duration getLockAtMostFor() {
		return this.lockAtMostFor;
	}

	public void setLockAtMostFor(Duration lockAtMostFor) {
		this.lockAtMostFor = lockAtMostFor;
	}

	public Duration getLockAtLeastFor() {
		return this.lockAtLeastFor;
	}

	public void setLockAtLeastFor(Duration lockAtLeastFor) {
		this.lockAtLeastFor = lockAtLeastFor;
	}

}
