package dev.holdfast.scheduling;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.core.task.TaskRejectedException;
import org.springframework.scheduling.TaskScheduler;

import dev.holdfast.core.EngineLease;
import dev.holdfast.scheduling.ScheduledJobs.RunNow;

/**
 * A run of a job now, asked for by an operator: claimed through the backend as a fixed-delay
 * job's run is, by one attempt on the job lock, on the asking thread, so that the answer says
 * whether the run started; the run itself goes on on the job's scheduler, as the job's runs do,
 * and holds the job lock as they do (renewed up to {@code lockAtMostFor}, kept for
 * {@code lockAtLeastFor}). A job whose lock is held, by a run anywhere or kept after one, is
 * busy: nothing runs. No tick is claimed: the scheduled ticks go on as before, and one that
 * fires while this run holds the job lock is dropped as {@code job-busy}.
 */
final class JobRunNow {

	private static final Log logger = LogFactory.getLog(JobRunNow.class);

	private JobRunNow() {
	}

	/**
	 * Starts a run of {@code job} now if its lock is free.
	 * @param caller who asked, for the log
	 * @throws dev.holdfast.LockBackendException if the backend failed: the job did not run
	 */
	static RunNow run(SingleInstanceJob job, TaskScheduler scheduler, String caller) {
		JobDefinition definition = job.definition();
		String name = definition.name();
		JobLocks locks = job.locks();
		if (locks == null || !job.runs().start()) {
			logger.info(caller + " asked to run job '" + name + "' now: not started, this instance's scheduling is "
					+ "stopped");
			return RunNow.STOPPING;
		}
		boolean handedOver = false;
		try {
			long startNanos = System.nanoTime();
			EngineLease lease = locks.acquireJobLock(name, definition.leaseTime(), definition.lockAtMostFor());
			if (lease == null) {
				logger.info(caller + " asked to run job '" + name + "' now: not started, its lock is held by a run "
						+ "(or kept for lockAtLeastFor after one)");
				return RunNow.BUSY;
			}
			// The run goes on on the scheduler's thread: this thread must not reenter the lock.
			lease.detachFromThread();
			try {
				scheduler.schedule(() -> {
					try {
						job.runHolding(locks, lease, startNanos, null);
					}
					finally {
						job.runs().end();
					}
				}, scheduler.getClock().instant());
			}
			catch (TaskRejectedException ex) {
				lease.close();
				logger.info(caller + " asked to run job '" + name + "' now: not started, its scheduler refused the"
						+ " run (" + ex.getMessage() + ")");
				return RunNow.STOPPING;
			}
			handedOver = true;
			logger.info("Job '" + name + "' runs now on this instance, started by " + caller);
			return RunNow.STARTED;
		}
		finally {
			if (!handedOver) {
				job.runs().end();
			}
		}
	}

}
