package dev.holdfast.autoconfigure;

import java.time.Duration;

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
	 * Longest time a job's lock lives when the annotation does not say, even if its holder hangs
	 * or dies. Never renewed: set it above the longest run.
	 */
	private Duration lockAtMostFor = Duration.ofMinutes(10);

	/**
	 * Shortest time a job's lock is kept after the start of a run when the annotation does not
	 * say.
	 */
	private Duration lockAtLeastFor = Duration.ZERO;

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
