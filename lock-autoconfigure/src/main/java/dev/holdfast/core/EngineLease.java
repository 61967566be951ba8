package dev.holdfast.core;

import java.time.Duration;
import java.util.concurrent.Executor;

import dev.holdfast.Lease;
import dev.holdfast.LockListener.LockObservation;

/**
 * A lease handed out by {@link DefaultLockTemplate}, with what the interceptor needs beyond
 * {@link Lease}: the observation of its acquisition and hold, and the end of its reentrancy on
 * the acquiring thread when it outlives the call that took it. Leases of any other
 * {@link dev.holdfast.LockTemplate} are handled through the static methods, which then observe
 * nothing and detach nothing.
 */
public interface EngineLease extends Lease {

	/**
	 * The observation of this lease's acquisition and hold, as the template's
	 * {@link dev.holdfast.LockListener} returned it.
	 */
	LockObservation observation();

	/**
	 * Ends reentrancy of this lease on the thread that acquired it: for leases that outlive the
	 * method that took them (a returned future or publisher). Later calls on that thread race for
	 * the lock like any other.
	 */
	void detachFromThread();

	/** The observation of {@code lease}: {@link LockObservation#NONE} unless it is an engine lease. */
	static LockObservation observationOf(Lease lease) {
		return (lease instanceof EngineLease engineLease) ? engineLease.observation() : LockObservation.NONE;
	}

	/**
	 * Stops the engine tracking this lease without releasing its lock: the lock stays on the
	 * backend until its time to live runs out (or was {@linkplain #extend set}), owned by nobody in
	 * this process. The lease ends as if released (listeners and observations are told so) and is
	 * listed no more. For locks that deliberately outlive the code that took them: a scheduled
	 * job's lock kept for {@code lockAtLeastFor} or {@code fixedDelay}, or a claim of a tick.
	 */
	void forget();

	/**
	 * Ends renewals {@code limit} after the acquisition was sent: the last one makes the lock expire
	 * then. For a scheduled run's {@code lockAtMostFor}; call it right after the acquisition.
	 */
	void renewAtMostFor(Duration limit);

	/**
	 * Marks this lease lost, as a failed renewal does: {@link #isValid()} turns false, a WARN names
	 * the lock and {@code reason}, the observation ends {@code lost}, and listeners count a lost
	 * lease. The lease still needs closing. For a holder that learns on its own that it ran past
	 * its lease (a scheduled run that reached {@code lockAtMostFor}).
	 */
	void markLost(String reason);

	/**
	 * {@link #markLost(String)} now, with its report (WARN, observation, listeners) made by
	 * {@code reports}: for a timer that must not run listeners (the engine's: LDR-3).
	 */
	void markLost(String reason, Executor reports);

	/** {@link #detachFromThread()} for an engine lease; nothing for any other lease. */
	static void detach(Lease lease) {
		if (lease instanceof EngineLease engineLease) {
			engineLease.detachFromThread();
		}
	}

}
