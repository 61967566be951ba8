package dev.holdfast.support;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import java.util.function.Supplier;
import java.util.stream.Stream;

import io.micrometer.observation.Observation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockListener;

/**
 * Calls several listeners in order, so that their failures never change what a lock does: a
 * listener method, an observation it returned or an observation handler behind it that throws is
 * logged (WARN the first time for that listener, DEBUG after that) and skipped, and the other
 * listeners are still called. Without it, a throw after a lease was registered would leave the
 * lease renewed with nobody to release it. The observations of one acquisition are combined; when
 * no listener observes, there is no observation to call.
 */
public final class CompositeLockListener implements LockListener {

	private static final Log logger = LogFactory.getLog(CompositeLockListener.class);

	private final List<Guard> guards;

	private CompositeLockListener(List<Guard> guards) {
		this.guards = guards;
	}

	/**
	 * One listener that calls {@code listeners} in order, each with its failures logged and
	 * ignored: {@link LockListener#NONE} for none.
	 * @param listeners the listeners, in the order they are called
	 * @return the combined listener
	 */
	public static LockListener of(List<LockListener> listeners) {
		List<Guard> guards = listeners.stream()
			.filter((listener) -> listener != LockListener.NONE)
			.flatMap((listener) -> (listener instanceof CompositeLockListener composite) ? composite.guards.stream()
					: Stream.of(new Guard(listener, new AtomicBoolean())))
			.toList();
		return guards.isEmpty() ? LockListener.NONE : new CompositeLockListener(guards);
	}

	@Override
	public LockObservation acquiring(String name, String key, String backend) {
		return observe(false, name, key, backend);
	}

	@Override
	public LockObservation acquiringRead(String name, String key, String backend) {
		return observe(true, name, key, backend);
	}

	private LockObservation observe(boolean read, String name, String key, String backend) {
		List<Observed> observed = null;
		for (Guard guard : this.guards) {
			LockObservation observation = guard.call(read ? "acquiringRead" : "acquiring",
					() -> read ? guard.listener.acquiringRead(name, key, backend)
							: guard.listener.acquiring(name, key, backend),
					LockObservation.NONE);
			if (observation != LockObservation.NONE) {
				observed = (observed != null) ? observed : new ArrayList<>(1);
				observed.add(new Observed(guard, observation));
			}
		}
		return (observed != null) ? new CompositeObservation(observed) : LockObservation.NONE;
	}

	@Override
	public void acquired(String name, String backend, Duration waited) {
		each("acquired", (listener) -> listener.acquired(name, backend, waited));
	}

	@Override
	public void notAcquired(String name, String backend, Duration waited) {
		each("notAcquired", (listener) -> listener.notAcquired(name, backend, waited));
	}

	@Override
	public void failed(String name, String backend, Duration waited, RuntimeException ex) {
		each("failed", (listener) -> listener.failed(name, backend, waited, ex));
	}

	@Override
	public void released(String name, String backend, Duration held) {
		each("released", (listener) -> listener.released(name, backend, held));
	}

	@Override
	public void releaseFailed(String name, String backend, RuntimeException ex) {
		each("releaseFailed", (listener) -> listener.releaseFailed(name, backend, ex));
	}

	@Override
	public void leaseLost(String name, String backend) {
		each("leaseLost", (listener) -> listener.leaseLost(name, backend));
	}

	@Override
	public void acquired(String name, String backend, String mode, Duration waited) {
		each("acquired", (listener) -> listener.acquired(name, backend, mode, waited));
	}

	@Override
	public void notAcquired(String name, String backend, String mode, Duration waited) {
		each("notAcquired", (listener) -> listener.notAcquired(name, backend, mode, waited));
	}

	@Override
	public void failed(String name, String backend, String mode, Duration waited, RuntimeException ex) {
		each("failed", (listener) -> listener.failed(name, backend, mode, waited, ex));
	}

	@Override
	public void released(String name, String backend, String mode, Duration held) {
		each("released", (listener) -> listener.released(name, backend, mode, held));
	}

	@Override
	public void releaseFailed(String name, String backend, String mode, RuntimeException ex) {
		each("releaseFailed", (listener) -> listener.releaseFailed(name, backend, mode, ex));
	}

	@Override
	public void leaseLost(String name, String backend, String mode) {
		each("leaseLost", (listener) -> listener.leaseLost(name, backend, mode));
	}

	@Override
	public void tickSkipped(String name, String backend, String reason) {
		each("tickSkipped", (listener) -> listener.tickSkipped(name, backend, reason));
	}

	private void each(String method, Consumer<LockListener> call) {
		for (Guard guard : this.guards) {
			guard.run(method, () -> call.accept(guard.listener));
		}
	}

	/** One listener, and whether a failure of it was logged at WARN yet. */
	private record Guard(LockListener listener, AtomicBoolean warned) {

		void run(String method, Runnable call) {
			try {
				call.run();
			}
			catch (RuntimeException ex) {
				failed(method, ex);
			}
		}

		<T> T call(String method, Supplier<T> call, T fallback) {
			try {
				return call.get();
			}
			catch (RuntimeException ex) {
				failed(method, ex);
				return fallback;
			}
		}

		private void failed(String method, RuntimeException ex) {
			String message = "Holdfast ignored a failure of LockListener " + this.listener.getClass().getName()
					+ " in " + method + "(); the lock works on, but what the listener records may be incomplete";
			if (this.warned.compareAndSet(false, true)) {
				logger.warn(message + " (later failures of this listener are logged at DEBUG)", ex);
			}
			else if (logger.isDebugEnabled()) {
				logger.debug(message, ex);
			}
		}

	}

	/** An observation returned by the listener of {@code guard}. */
	private record Observed(Guard guard, LockObservation observation) {

		Observation hold() {
			return this.guard.call("LockObservation.hold", this.observation::hold, Observation.NOOP);
		}

	}

	/**
	 * The observations of several listeners, told the same things. Only one hold can be the
	 * current observation of a thread: the first that is observed.
	 */
	private record CompositeObservation(List<Observed> observed) implements LockObservation {

		@Override
		public void acquired(long fencingToken) {
			each("LockObservation.acquired", (observation) -> observation.acquired(fencingToken));
		}

		@Override
		public void notAcquired() {
			each("LockObservation.notAcquired", LockObservation::notAcquired);
		}

		@Override
		public void failed(Throwable ex) {
			each("LockObservation.failed", (observation) -> observation.failed(ex));
		}

		@Override
		public void cancelled() {
			each("LockObservation.cancelled", LockObservation::cancelled);
		}

		@Override
		public void released() {
			each("LockObservation.released", LockObservation::released);
		}

		@Override
		public void lost() {
			each("LockObservation.lost", LockObservation::lost);
		}

		@Override
		public Observation hold() {
			return this.observed.stream().map(Observed::hold).filter((hold) -> !hold.isNoop()).findFirst()
				.orElse(Observation.NOOP);
		}

		@Override
		public Observation.Scope openScope() {
			for (Observed observed : this.observed) {
				if (!observed.hold().isNoop()) {
					Observation.Scope scope = observed.guard.call("LockObservation.openScope",
							observed.observation::openScope, Observation.Scope.NOOP);
					return scope.isNoop() ? scope : new GuardedScope(observed.guard, scope);
				}
			}
			return Observation.Scope.NOOP;
		}

		private void each(String method, Consumer<LockObservation> call) {
			for (Observed observed : this.observed) {
				observed.guard.run(method, () -> call.accept(observed.observation));
			}
		}

	}

	/** A scope whose handlers may throw when it closes. */
	private record GuardedScope(Guard guard, Observation.Scope scope) implements Observation.Scope {

		@Override
		public Observation getCurrentObservation() {
			return this.scope.getCurrentObservation();
		}

		@Override
		public Observation.@Nullable Scope getPreviousObservationScope() {
			return this.scope.getPreviousObservationScope();
		}

		@Override
		public void close() {
			this.guard.run("Observation.Scope.close", this.scope::close);
		}

		@Override
		public void reset() {
			this.scope.reset();
		}

		@Override
		public void makeCurrent() {
			this.scope.makeCurrent();
		}

	}

}
