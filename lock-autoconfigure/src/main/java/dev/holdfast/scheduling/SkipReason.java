package dev.holdfast.scheduling;

/**
 * Why an instance did not run a tick, as the {@code reason} tag of
 * {@code holdfast.scheduled.skipped}. Only {@link #RAN_ELSEWHERE} is normal; the others are drops
 * (the tick may have run on no instance), logged at INFO or WARN by the instance that decided.
 */
enum SkipReason {

	/** Another instance claimed this tick (or a later one), or, for fixed-delay jobs, holds the job. */
	RAN_ELSEWHERE("ran-elsewhere"),

	/**
	 * This instance claimed the tick, but the job's lock was held: the previous run still runs, or
	 * its lock is kept for {@code lockAtLeastFor}. The tick runs nowhere.
	 */
	JOB_BUSY("job-busy"),

	/** The run started too long after its tick for the backend to accept the claim; the clock agrees. */
	LATE("late"),

	/** This instance's clock is off the backend's by more than the tolerance: it runs no ticks. */
	CLOCK_OFF("clock-off"),

	/** Redlock: claims of this tick split the nodes and this one won no quorum. */
	NO_QUORUM("no-quorum"),

	/** The backend could not be reached or failed. */
	BACKEND_FAILED("backend-failed");

	private final String tag;

	SkipReason(String tag) {
		this.tag = tag;
	}

	/** The value of the metric's {@code reason} tag. */
	String tag() {
		return this.tag;
	}

}
