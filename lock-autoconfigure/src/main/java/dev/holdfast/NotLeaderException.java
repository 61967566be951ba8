package dev.holdfast;

/**
 * A {@link LeaderOnly} method with {@code onNotLeader = THROW} was called while this instance
 * does not lead its group; the method did not run.
 */
public class NotLeaderException extends LockException {

	private final String group;

	public NotLeaderException(String group) {
		super("This instance does not lead group '" + group + "'", null);
		this.group = group;
	}

	/** The leader group. */
	public String getGroup() {
		return this.group;
	}

}
