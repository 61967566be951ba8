package dev.holdfast;

import java.time.Duration;

import io.micrometer.observation.Observation;

/**
 * Receives what Holdfast's locks do (acquisitions, holds, scheduled runs), for metrics and tracing. Methods are called
 * on the thread doing the work and must not block. {@code name} is the lock name without its key:
 * bounded cardinality.
 */
public interface LockListener {

	/**
	 * An acquisition of lock {@code name} starts on the calling thread; {@code key} is the backend
	 * key, which can contain user data. The returned observation is told how the acquisition ends
	 * and, when the lock was acquired, follows the lease until it is released or lost. Called on
	 * every acquisition that is not reentrant: return {@link LockObservation#NONE} cheaply when
	 * there is nothing to observe.
	 */
	default LockObservation acquiring(String name, String key, String backend) {
		return LockObservation.NONE;
	}

	/**
	 * {@link #acquiring} for a read hold ({@link LockMode#READ}); the default observes it as
	 * {@code acquiring} does.
	 */
	default LockObservation acquiringRead(String name, String key, String backend) {
		return acquiring(name, key, backend);
	}

	/** A lock was acquired after {@code waited}. */
	default void acquired(String name, String backend, Duration waited) {
	}

	/**
	 * A lock was acquired after {@code waited}, as {@link #acquired(String, String, Duration)},
	 * told what was taken: {@code mode} is {@link LeaseInfo#EXCLUSIVE}, {@link LeaseInfo#PERMIT}
	 * or {@link LeaseInfo#READ}, the {@code mode} tag of the meters and observations (OBS-14). The
	 * engine calls the methods with {@code mode}; by default they call the ones without it.
	 */
	default void acquired(String name, String backend, String mode, Duration waited) {
		acquired(name, backend, waited);
	}

	/** The lock stayed held by another owner for the whole wait time. */
	default void notAcquired(String name, String backend, Duration waited) {
	}

	/** {@link #notAcquired(String, String, Duration)} with the {@code mode} asked for. */
	default void notAcquired(String name, String backend, String mode, Duration waited) {
		notAcquired(name, backend, waited);
	}

	/** The backend failed; the caller gets a {@link dev.holdfast.LockBackendException}. */
	default void failed(String name, String backend, Duration waited, RuntimeException ex) {
	}

	/** {@link #failed(String, String, Duration, RuntimeException)} with the {@code mode} asked for. */
	default void failed(String name, String backend, String mode, Duration waited, RuntimeException ex) {
		failed(name, backend, waited, ex);
	}

	/** A lease was released after being held for {@code held}. */
	default void released(String name, String backend, Duration held) {
	}

	/** {@link #released(String, String, Duration)} with the lease's {@code mode}. */
	default void released(String name, String backend, String mode, Duration held) {
		released(name, backend, held);
	}

	/**
	 * The release of a lease failed (the backend could not be reached or answered with an error):
	 * the lock stays on the backend until its time to live runs out. Followed by
	 * {@link #released}, since this process no longer holds it. A release sent in the background
	 * reports here after {@code Lease.close()} returned.
	 */
	default void releaseFailed(String name, String backend, RuntimeException ex) {
	}

	/** {@link #releaseFailed(String, String, RuntimeException)} with the lease's {@code mode}. */
	default void releaseFailed(String name, String backend, String mode, RuntimeException ex) {
		releaseFailed(name, backend, ex);
	}

	/** A held lease could not be renewed and is no longer owned by this process. */
	default void leaseLost(String name, String backend) {
	}

	/**
	 * {@link #leaseLost(String, String)} with the lease's {@code mode}: once per lease, a read
	 * lease's too, however many local readers hold it.
	 */
	default void leaseLost(String name, String backend, String mode) {
		leaseLost(name, backend);
	}

	/**
	 * A tick of the scheduled job {@code name} did not run on this instance, for {@code reason}:
	 * {@code ran-elsewhere} (another instance claimed it: normal), or a drop: {@code job-busy}
	 * (claimed here, but the job's lock was held), {@code late} (claimed too long after the tick),
	 * {@code clock-off} (this instance's clock is off the backend's), {@code no-quorum} (Redlock
	 * claims split the nodes), {@code backend-failed}.
	 */
	default void tickSkipped(String name, String backend, String reason) {
	}

	/** A listener that does nothing. */
	LockListener NONE = new LockListener() {
	};

	/**
	 * One acquisition and, once acquired, the hold of its lease, as
	 * {@link LockListener#acquiring} observes it. Exactly one outcome of the acquisition counts
	 * ({@code acquired}, {@code notAcquired}, {@code failed} or {@code cancelled}) and, after
	 * {@code acquired}, exactly one end of the hold ({@code released} or {@code lost}); later
	 * calls are ignored. Calls may come from any thread and must not block.
	 */
	interface LockObservation {

		/** The lock was acquired with {@code fencingToken}; the hold starts. */
		void acquired(long fencingToken);

		/** The lock stayed held by another owner for the whole wait time. */
		void notAcquired();

		/** The acquisition failed with {@code ex} (a backend failure, an invalid argument). */
		void failed(Throwable ex);

		/** The caller gave up waiting: its thread was interrupted or its future cancelled. */
		void cancelled();

		/** The lease was released: the hold ends. */
		void released();

		/** The lease could not be renewed and is no longer owned: the hold ends. */
		void lost();

		/**
		 * The Micrometer observation of the hold, for instrumentation that takes its parent from
		 * a Reactor context; {@link Observation#NOOP} when the hold is not observed.
		 */
		Observation hold();

		/**
		 * Makes the hold the current observation of this thread until the scope is closed, so
		 * that what the locked code observes (JDBC, HTTP) is a child of it. Close it on the same
		 * thread. A no-op when the hold is not observed or already encloses the current
		 * observation (a reentrant call).
		 */
		Observation.Scope openScope();

		/** Observes nothing. */
		LockObservation NONE = new LockObservation() {

			@Override
			public void acquired(long fencingToken) {
			}

			@Override
			public void notAcquired() {
			}

			@Override
			public void failed(Throwable ex) {
			}

			@Override
			public void cancelled() {
			}

			@Override
			public void released() {
			}

			@Override
			public void lost() {
			}

			@Override
			public Observation hold() {
				return Observation.NOOP;
			}

			@Override
			public Observation.Scope openScope() {
				return Observation.Scope.NOOP;
			}

		};

	}

}
