package dev.holdfast;

/**
 * Leader election over the lock backend: one leader per group at a time, each term with a
 * fencing token larger than every earlier term's. Holdfast auto-configures one; groups named by
 * {@link LeaderOnly} are joined for you.
 * <pre>{@code
 * Leadership leadership = leaderElections.join("outbox");
 * leadership.addListener(event -> ...);   // told the current term at once, then every change
 * }</pre>
 */
public interface LeaderElections {

	/**
	 * Joins {@code group}: this instance campaigns for its leadership, from now or, in an
	 * application, once it is ready. Joining a group joined already returns the same
	 * {@link Leadership} while it is not closed.
	 * @param group the group name, not empty, without {@code /} (the {@code leaders} endpoint reads
	 * {@code leaders/<backend>/<group>}); any other characters (it is encoded into the backend key)
	 * @throws IllegalArgumentException for an empty name or one with {@code /}
	 */
	Leadership join(String group);

}
