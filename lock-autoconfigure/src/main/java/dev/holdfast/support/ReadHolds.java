package dev.holdfast.support;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.jspecify.annotations.Nullable;

import dev.holdfast.LockListener.LockObservation;

/**
 * The local readers of one read lease of the engine (RWL-2): the holds per thread, and the
 * observation of each open hold, so that a loss reaches every reader (RWL-6). Bounded by the holds
 * open. Thread-safe.
 */
public final class ReadHolds {

	private final ConcurrentHashMap<Thread, Integer> threads = new ConcurrentHashMap<>();

	private final Set<LockObservation> observations = ConcurrentHashMap.newKeySet();

	/** A hold of {@code thread} enters; {@code observation} {@code null} for a reentrant hold, observed by its first. */
	public void enter(Thread thread, @Nullable LockObservation observation) {
		this.threads.merge(thread, 1, Integer::sum);
		if (observation != null) {
			this.observations.add(observation);
		}
	}

	/** One hold bound to {@code thread} ends (closed or detached). */
	public void leaveThread(Thread thread) {
		this.threads.computeIfPresent(thread, (t, holds) -> (holds > 1) ? holds - 1 : null);
	}

	/** The hold observed by {@code observation} closed. */
	public void closed(LockObservation observation) {
		this.observations.remove(observation);
	}

	public boolean heldBy(Thread thread) {
		return this.threads.containsKey(thread);
	}

	/** The lease was lost: each open hold's observation ends lost. */
	public void lost() {
		this.observations.forEach(LockObservation::lost);
	}

}
