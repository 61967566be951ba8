package dev.holdfast.core;

import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

/**
 * The two background threads of one template (REN-1, LDR-9), each started by its first task and
 * ended 1 s after its last with none queued or scheduled:
 * <ul>
 * <li>the <b>timer</b> ({@code holdfast-timer-<backend>}), whose tasks never block and run no
 * application code: renewal ticks and their answers, the leader groups' timers, campaigns and
 * checks, the jobs' {@code lockAtMostFor}; so no backend call and no listener delays a deadline
 * (LDR-3);</li>
 * <li>the <b>worker</b> ({@code holdfast-renewal-<backend>}), for what may block or run
 * application code: the renewal calls of a backend that cannot renew without blocking, and the
 * reports of leases found lost (WARN, observation, listeners).</li>
 * </ul>
 * Each is a one-thread scheduled executor, whose tasks always pass its queue: a new thread runs
 * them in the order queued (LDR-4).
 */
public final class EngineThreads {

	private static final Log logger = LogFactory.getLog(EngineThreads.class);

	private final ScheduledThreadPoolExecutor timer;

	private final ScheduledThreadPoolExecutor worker;

	EngineThreads(String backendName) {
		this.timer = onDemand("holdfast-timer-" + backendName);
		this.worker = onDemand("holdfast-renewal-" + backendName);
	}

	/**
	 * Runs {@code task} on the timer after {@code delayNanos} (at once if not positive).
	 * @throws RejectedExecutionException once the template is closed
	 */
	public ScheduledFuture<?> schedule(Runnable task, long delayNanos) {
		return this.timer.schedule(task, Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
	}

	/**
	 * Runs {@code task} on the timer, after every task queued before it.
	 * @throws RejectedExecutionException once the template is closed
	 */
	public void execute(Runnable task) {
		this.timer.execute(task);
	}

	/**
	 * Runs {@code task}, which may block or call application code, on the worker; what it throws
	 * is logged (ERROR). Once the template is closed, on the calling thread.
	 */
	public void work(Runnable task) {
		Runnable logged = () -> {
			try {
				task.run();
			}
			catch (RuntimeException | Error ex) {
				logger.error("A Holdfast background task failed", ex);
			}
		};
		try {
			this.worker.execute(logged);
		}
		catch (RejectedExecutionException ex) {
			logged.run();
		}
	}

	/** The timer, as an executor (it rejects tasks once the template is closed). */
	Executor timer() {
		return this.timer;
	}

	/** The worker as an executor that runs a task on the calling thread once the template is closed. */
	Executor workerOrCaller() {
		return (task) -> {
			try {
				this.worker.execute(task);
			}
			catch (RejectedExecutionException ex) {
				task.run();
			}
		};
	}

	boolean isShutdown() {
		return this.timer.isShutdown();
	}

	/**
	 * Ends both threads once what is queued ran (a renewal's answer gives its permits back, a loss
	 * is reported); timers not due yet are dropped.
	 */
	void shutdown() {
		this.timer.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
		this.timer.shutdown();
		this.worker.shutdown();
	}

	/**
	 * One daemon thread, started by the first task and ended 1 s after the last task ran with
	 * none queued or scheduled (LDR-9). A scheduled executor, not a plain one: its tasks always go
	 * through its queue, so they run in the order queued even when the thread ends and another
	 * starts (a plain executor hands a task to a new thread directly, ahead of one queued just
	 * before the old thread ended).
	 */
	public static ScheduledThreadPoolExecutor onDemand(String name) {
		ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, (task) -> {
			Thread thread = new Thread(task, name);
			thread.setDaemon(true);
			return thread;
		});
		executor.setRemoveOnCancelPolicy(true);
		executor.setKeepAliveTime(1, TimeUnit.SECONDS);
		executor.allowCoreThreadTimeOut(true);
		return executor;
	}

}
