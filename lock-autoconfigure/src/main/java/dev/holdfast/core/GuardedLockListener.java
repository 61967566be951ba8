package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicBoolean;

import io.micrometer.observation.Observation;
import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.LockListener;

/**
 * Calls one {@link LockListener} so that its failures never change what a lock does: a listener
 * method, an observation it returned or an observation handler behind it that throws is logged
 * (WARN the first time for this listener, DEBUG after that) and otherwise ignored. Without it, a
 * throw after a lease was registered would leave the lease renewed with nobody to release it.
 */
final class GuardedLockListener implements LockListener {

	private static final Log logger = LogFactory.getLog(GuardedLockListener.class);

	private final LockListener delegate;

	private final AtomicBoolean warned = new AtomicBoolean();

	private GuardedLockListener(LockListener delegate) {
		this.delegate = delegate;
	}

	/**
	 * {@code listener} with its failures logged and ignored: as it is when it cannot fail or is
	 * guarded already ({@link LockListener#NONE}, a {@link CompositeLockListener}, whose listeners
	 * are guarded each).
	 */
	static LockListener of(LockListener listener) {
		if (listener == LockListener.NONE || listener instanceof GuardedLockListener
				|| listener instanceof CompositeLockListener) {
			return listener;
		}
		return new GuardedLockListener(listener);
	}

	@Override
	public LockObservation acquiring(String name, String key, String backend) {
		try {
			LockObservation observation = this.delegate.acquiring(name, key, backend);
			return (observation == LockObservation.NONE) ? observation : new GuardedObservation(observation);
		}
		catch (RuntimeException ex) {
			failed("acquiring", ex);
			return LockObservation.NONE;
		}
	}

	@Override
	public void acquired(String name, String backend, Duration waited) {
		try {
			this.delegate.acquired(name, backend, waited);
		}
		catch (RuntimeException ex) {
			failed("acquired", ex);
		}
	}

	@Override
	public void notAcquired(String name, String backend, Duration waited) {
		try {
			this.delegate.notAcquired(name, backend, waited);
		}
		catch (RuntimeException ex) {
			failed("notAcquired", ex);
		}
	}

	@Override
	public void failed(String name, String backend, Duration waited, RuntimeException failure) {
		try {
			this.delegate.failed(name, backend, waited, failure);
		}
		catch (RuntimeException ex) {
			failed("failed", ex);
		}
	}

	@Override
	public void released(String name, String backend, Duration held) {
		try {
			this.delegate.released(name, backend, held);
		}
		catch (RuntimeException ex) {
			failed("released", ex);
		}
	}

	@Override
	public void releaseFailed(String name, String backend, RuntimeException ex) {
		try {
			this.delegate.releaseFailed(name, backend, ex);
		}
		catch (RuntimeException failure) {
			failed("releaseFailed", failure);
		}
	}

	@Override
	public void leaseLost(String name, String backend) {
		try {
			this.delegate.leaseLost(name, backend);
		}
		catch (RuntimeException ex) {
			failed("leaseLost", ex);
		}
	}

	@Override
	public void tickSkipped(String name, String backend, String reason) {
		try {
			this.delegate.tickSkipped(name, backend, reason);
		}
		catch (RuntimeException ex) {
			failed("tickSkipped", ex);
		}
	}

	private void failed(String method, RuntimeException ex) {
		String message = "Holdfast ignored a failure of LockListener " + this.delegate.getClass().getName() + " in "
				+ method + "(); the lock works on, but what the listener records may be incomplete";
		if (this.warned.compareAndSet(false, true)) {
			logger.warn(message + " (later failures of this listener are logged at DEBUG)", ex);
		}
		else if (logger.isDebugEnabled()) {
			logger.debug(message, ex);
		}
	}

	/** An observation of the listener, guarded like the listener. */
	private final class GuardedObservation implements LockObservation {

		private final LockObservation delegate;

		GuardedObservation(LockObservation delegate) {
			this.delegate = delegate;
		}

		@Override
		public void acquired(long fencingToken) {
			try {
				this.delegate.acquired(fencingToken);
			}
			catch (RuntimeException ex) {
				failed("LockObservation.acquired", ex);
			}
		}

		@Override
		public void notAcquired() {
			try {
				this.delegate.notAcquired();
			}
			catch (RuntimeException ex) {
				failed("LockObservation.notAcquired", ex);
			}
		}

		@Override
		public void failed(Throwable failure) {
			try {
				this.delegate.failed(failure);
			}
			catch (RuntimeException ex) {
				GuardedLockListener.this.failed("LockObservation.failed", ex);
			}
		}

		@Override
		public void cancelled() {
			try {
				this.delegate.cancelled();
			}
			catch (RuntimeException ex) {
				failed("LockObservation.cancelled", ex);
			}
		}

		@Override
		public void released() {
			try {
				this.delegate.released();
			}
			catch (RuntimeException ex) {
				failed("LockObservation.released", ex);
			}
		}

		@Override
		public void lost() {
			try {
				this.delegate.lost();
			}
			catch (RuntimeException ex) {
				failed("LockObservation.lost", ex);
			}
		}

		@Override
		public Observation hold() {
			try {
				return this.delegate.hold();
			}
			catch (RuntimeException ex) {
				failed("LockObservation.hold", ex);
				return Observation.NOOP;
			}
		}

		@Override
		public Observation.Scope openScope() {
			try {
				Observation.Scope scope = this.delegate.openScope();
				return scope.isNoop() ? scope : new GuardedScope(scope);
			}
			catch (RuntimeException ex) {
				failed("LockObservation.openScope", ex);
				return Observation.Scope.NOOP;
			}
		}

		private void failed(String method, RuntimeException ex) {
			GuardedLockListener.this.failed(method, ex);
		}

	}

	/** A scope whose handlers may throw when it closes. */
	private final class GuardedScope implements Observation.Scope {

		private final Observation.Scope delegate;

		GuardedScope(Observation.Scope delegate) {
			this.delegate = delegate;
		}

		@Override
		public Observation getCurrentObservation() {
			return this.delegate.getCurrentObservation();
		}

		@Override
		public Observation.@Nullable Scope getPreviousObservationScope() {
			return this.delegate.getPreviousObservationScope();
		}

		@Override
		public void close() {
			try {
				this.delegate.close();
			}
			catch (RuntimeException ex) {
				failed("Observation.Scope.close", ex);
			}
		}

		@Override
		public void reset() {
			this.delegate.reset();
		}

		@Override
		public void makeCurrent() {
			this.delegate.makeCurrent();
		}

	}

}
