package dev.holdfast.leader;

import java.util.ArrayDeque;
import java.util.Deque;

import org.jspecify.annotations.Nullable;

import dev.holdfast.LeaderTerm;

/**
 * The terms of the {@code @LeaderOnly} methods running on a thread, innermost first. Applications
 * read them through {@link dev.holdfast.LeaderContext}; only the interceptor binds them.
 */
public final class TermBindings {

	private static final ThreadLocal<Deque<LeaderTerm>> TERMS = ThreadLocal.withInitial(ArrayDeque::new);

	private TermBindings() {
	}

	/** The term of the innermost {@code @LeaderOnly} method on this thread, or {@code null}. */
	public static @Nullable LeaderTerm current() {
		Deque<LeaderTerm> terms = TERMS.get();
		LeaderTerm term = terms.peek();
		if (term == null) {
			TERMS.remove();
		}
		return term;
	}

	/** Binds {@code term} to this thread until the returned binding is closed. */
	public static Binding bind(LeaderTerm term) {
		Deque<LeaderTerm> terms = TERMS.get();
		terms.push(term);
		return () -> {
			terms.remove(term);
			if (terms.isEmpty()) {
				TERMS.remove();
			}
		};
	}

	/** A binding of a term to a thread; closing it unbinds. */
	@FunctionalInterface
	public interface Binding extends AutoCloseable {

		@Override
		void close();

	}

}
