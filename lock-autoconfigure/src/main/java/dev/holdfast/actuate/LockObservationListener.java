package dev.holdfast.actuate;

import java.util.concurrent.atomic.AtomicInteger;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.ObservationView;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockListener;
import dev.holdfast.core.LockKeys;

/**
 * Observes every acquisition of Holdfast's lock engine and every hold
 * that follows with Micrometer Observations, which tracing turns into spans and Boot's
 * {@code DefaultMeterObservationHandler} into timers:
 * <ul>
 * <li>{@value LockMetricsListener#ACQUIRE} (span "lock acquire &lt;name&gt;"): from the start of an
 * acquisition to its outcome; {@value #OUTCOME} = {@code acquired}, {@code not_acquired},
 * {@code failed} (with the exception as error) or {@code cancelled} (interrupted or
 * cancelled);</li>
 * <li>{@value LockMetricsListener#HELD} (span "lock held &lt;name&gt;"): from acquisition to the end
 * of the hold; {@value #OUTCOME} = {@code released} or {@code lost} (renewal failed: what still
 * runs is no longer exclusive).</li>
 * </ul>
 * Low-cardinality key values, which become meter tags: {@value #NAME} (the lock name, never the
 * key), {@value #BACKEND}, {@value #MODE} ({@code exclusive}, or {@code permit} for a permit of
 * a semaphore, told by its slot key, or {@code read} for a read hold) and {@value #OUTCOME}. High-cardinality, spans only:
 * {@value #FENCING_TOKEN} once acquired. The backend key is left out because it can contain user
 * data; it is on the {@link LockObservationContext} for an application that wants it.
 * <p>
 * Both observations have the caller's current observation as parent: the held one is a sibling
 * of the acquire one, not its child. Reentrant acquisitions are not observed.
 */
public class LockObservationListener implements LockListener {

	/** Low-cardinality key of the lock name. */
	public static final String NAME = "name";

	/** Low-cardinality key of the backend name. */
	public static final String BACKEND = "backend";

	/** Low-cardinality key of what is taken: {@code exclusive}, {@code permit} or {@code read}. */
	public static final String MODE = "mode";

	/** Low-cardinality key of how the acquisition or the hold ended. */
	public static final String OUTCOME = "outcome";

	/** High-cardinality key of the lease's fencing token. */
	public static final String FENCING_TOKEN = "fencing.token";

	private final ObservationRegistry registry;

	/**
	 * Observes into {@code registry}; observes nothing while it has no handler.
	 */
	public LockObservationListener(ObservationRegistry registry) {
		this.registry = registry;
	}

	@Override
	public LockObservation acquiring(String name, String key, String backend) {
		if (this.registry.isNoop()) {
			return LockObservation.NONE;
		}
		return new ObservedLock(this.registry, new LockObservationContext(name, key, backend),
				LockKeys.mode(key, false));
	}

	/** A read hold's observations are tagged {@code mode=read} (RWL-7). */
	@Override
	public LockObservation acquiringRead(String name, String key, String backend) {
		if (this.registry.isNoop()) {
			return LockObservation.NONE;
		}
		return new ObservedLock(this.registry, new LockObservationContext(name, key, backend),
				LockKeys.mode(key, true));
	}

	/** The two observations of one lock: acquiring, then holding, then done. */
	private static final class ObservedLock implements LockObservation {

		private static final int ACQUIRING = 0;

		private static final int HOLDING = 1;

		private static final int DONE = 2;

		private final AtomicInteger state = new AtomicInteger(ACQUIRING);

		private final ObservationRegistry registry;

		private final LockObservationContext acquireContext;

		private final @Nullable Observation parent;

		private final Observation acquire;

		private volatile Observation hold = Observation.NOOP;

		private final String mode;

		ObservedLock(ObservationRegistry registry, LockObservationContext context, String mode) {
			this.registry = registry;
			this.mode = mode;
			this.acquireContext = context;
			this.parent = registry.getCurrentObservation();
			this.acquire = create(LockMetricsListener.ACQUIRE, "lock acquire ", context).start();
		}

		private Observation create(String observationName, String action, LockObservationContext context) {
			return Observation.createNotStarted(observationName, () -> context, this.registry)
				.parentObservation(this.parent)
				.contextualName(action + context.getLockName())
				.lowCardinalityKeyValue(NAME, context.getLockName())
				.lowCardinalityKeyValue(BACKEND, context.getBackend())
				.lowCardinalityKeyValue(MODE, this.mode);
		}

		@Override
		public void acquired(long fencingToken) {
			if (!this.state.compareAndSet(ACQUIRING, HOLDING)) {
				return;
			}
			String token = Long.toString(fencingToken);
			this.acquireContext.setFencingToken(fencingToken);
			this.acquire.highCardinalityKeyValue(FENCING_TOKEN, token);
			stop(this.acquire, "acquired");
			LockObservationContext context = new LockObservationContext(this.acquireContext.getLockName(),
					this.acquireContext.getKey(), this.acquireContext.getBackend());
			context.setFencingToken(fencingToken);
			this.hold = create(LockMetricsListener.HELD, "lock held ", context)
				.highCardinalityKeyValue(FENCING_TOKEN, token)
				.start();
		}

		@Override
		public void notAcquired() {
			endAcquire("not_acquired", null);
		}

		@Override
		public void failed(Throwable ex) {
			endAcquire("failed", ex);
		}

		@Override
		public void cancelled() {
			endAcquire("cancelled", null);
		}

		@Override
		public void released() {
			endHold("released");
		}

		@Override
		public void lost() {
			endHold("lost");
		}

		@Override
		public Observation hold() {
			return this.hold;
		}

		@Override
		public Observation.Scope openScope() {
			Observation held = this.hold;
			if (held.isNoop() || this.state.get() != HOLDING || encloses(held)) {
				return Observation.Scope.NOOP;
			}
			return held.openScope();
		}

		/** Whether the current observation is {@code held} or runs inside it. */
		private boolean encloses(Observation held) {
			ObservationView current = this.registry.getCurrentObservation();
			while (current != null) {
				if (current == held) {
					return true;
				}
				current = current.getContextView().getParentObservation();
			}
			return false;
		}

		private void endAcquire(String outcome, @Nullable Throwable ex) {
			if (this.state.compareAndSet(ACQUIRING, DONE)) {
				if (ex != null) {
					this.acquire.error(ex);
				}
				stop(this.acquire, outcome);
			}
		}

		private void endHold(String outcome) {
			if (this.state.compareAndSet(HOLDING, DONE)) {
				stop(this.hold, outcome);
			}
		}

		private static void stop(Observation observation, String outcome) {
			observation.lowCardinalityKeyValue(OUTCOME, outcome).stop();
		}

	}

}
