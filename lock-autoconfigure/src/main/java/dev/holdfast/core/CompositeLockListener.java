package dev.holdfast.core;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import io.micrometer.observation.Observation;

import dev.holdfast.LockListener;

/**
 * Calls several listeners in order. Their observations of one acquisition are combined; when at
 * most one listener observes (the usual case), its observation is used as it is. A listener that
 * throws is logged and skipped: the others are still called, and the lock is not affected.
 */
public final class CompositeLockListener implements LockListener {

	private final List<LockListener> listeners;

	private CompositeLockListener(List<LockListener> listeners) {
		this.listeners = listeners;
	}

	/**
	 * One listener that calls {@code listeners} in order, each with its failures logged and
	 * ignored: {@link LockListener#NONE} for none.
	 * @param listeners the listeners, in the order they are called
	 * @return the combined listener
	 */
	public static LockListener of(List<LockListener> listeners) {
		if (listeners.isEmpty()) {
			return LockListener.NONE;
		}
		if (listeners.size() == 1) {
			return GuardedLockListener.of(listeners.get(0));
		}
		return new CompositeLockListener(listeners.stream().map(GuardedLockListener::of).toList());
	}

	@Override
	public LockObservation acquiring(String name, String key, String backend) {
		LockObservation first = LockObservation.NONE;
		List<LockObservation> all = null;
		for (LockListener listener : this.listeners) {
			LockObservation observation = listener.acquiring(name, key, backend);
			if (observation == LockObservation.NONE) {
				continue;
			}
			if (first == LockObservation.NONE) {
				first = observation;
			}
			else {
				if (all == null) {
					all = new ArrayList<>();
					all.add(first);
				}
				all.add(observation);
			}
		}
		return (all != null) ? new CompositeLockObservation(all) : first;
	}

	@Override
	public void acquired(String name, String backend, Duration waited) {
		this.listeners.forEach((listener) -> listener.acquired(name, backend, waited));
	}

	@Override
	public void notAcquired(String name, String backend, Duration waited) {
		this.listeners.forEach((listener) -> listener.notAcquired(name, backend, waited));
	}

	@Override
	public void failed(String name, String backend, Duration waited, RuntimeException ex) {
		this.listeners.forEach((listener) -> listener.failed(name, backend, waited, ex));
	}

	@Override
	public void released(String name, String backend, Duration held) {
		this.listeners.forEach((listener) -> listener.released(name, backend, held));
	}

	@Override
	public void releaseFailed(String name, String backend, RuntimeException ex) {
		this.listeners.forEach((listener) -> listener.releaseFailed(name, backend, ex));
	}

	@Override
	public void leaseLost(String name, String backend) {
		this.listeners.forEach((listener) -> listener.leaseLost(name, backend));
	}

	@Override
	public void tickSkipped(String name, String backend, String reason) {
		this.listeners.forEach((listener) -> listener.tickSkipped(name, backend, reason));
	}

	/**
	 * The observations of several listeners, told the same things. Only one hold can be the
	 * current observation of a thread: the first listener's that observes one.
	 */
	private static final class CompositeLockObservation implements LockObservation {

		private final List<LockObservation> observations;

		CompositeLockObservation(List<LockObservation> observations) {
			this.observations = observations;
		}

		@Override
		public void acquired(long fencingToken) {
			this.observations.forEach((observation) -> observation.acquired(fencingToken));
		}

		@Override
		public void notAcquired() {
			this.observations.forEach(LockObservation::notAcquired);
		}

		@Override
		public void failed(Throwable ex) {
			this.observations.forEach((observation) -> observation.failed(ex));
		}

		@Override
		public void cancelled() {
			this.observations.forEach(LockObservation::cancelled);
		}

		@Override
		public void released() {
			this.observations.forEach(LockObservation::released);
		}

		@Override
		public void lost() {
			this.observations.forEach(LockObservation::lost);
		}

		@Override
		public Observation hold() {
			return first().hold();
		}

		@Override
		public Observation.Scope openScope() {
			return first().openScope();
		}

		/** The first observation with an observed hold: the one made current for locked code. */
		private LockObservation first() {
			for (LockObservation observation : this.observations) {
				if (!observation.hold().isNoop()) {
					return observation;
				}
			}
			return LockObservation.NONE;
		}

	}

}
