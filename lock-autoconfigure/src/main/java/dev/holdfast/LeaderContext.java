package dev.holdfast;

import java.util.Optional;

import dev.holdfast.leader.TermBindings;

/**
 * The term of the innermost {@link LeaderOnly} method running on the current thread.
 * <pre>{@code
 * long token = LeaderContext.requireTerm().fencingToken();
 * }</pre>
 */
public final class LeaderContext {

	private LeaderContext() {
	}

	/** The term of the innermost {@code @LeaderOnly} method on this thread, if any. */
	public static Optional<LeaderTerm> currentTerm() {
		return Optional.ofNullable(TermBindings.current());
	}

	/**
	 * The term of the innermost {@code @LeaderOnly} method on this thread.
	 * @throws IllegalStateException when called outside one (or in one called without its proxy)
	 */
	public static LeaderTerm requireTerm() {
		LeaderTerm term = TermBindings.current();
		if (term == null) {
			throw new IllegalStateException("No @LeaderOnly method runs on this thread: call the method through its "
					+ "Spring bean (not this.method()), or use LeaderElections.join(group).term()");
		}
		return term;
	}

}
