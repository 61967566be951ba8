package dev.holdfast.scheduling;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.jspecify.annotations.Nullable;

/**
 * The runs of scheduled jobs in progress, for a graceful stop: while open, runs may start; once
 * closed, none starts, and a callback runs as soon as the last run in progress has ended, on the
 * thread that ended it. No thread waits and nothing polls.
 */
final class JobRuns {

	private final AtomicInteger inProgress = new AtomicInteger();

	private final AtomicReference<@Nullable Runnable> whenIdle = new AtomicReference<>();

	private volatile boolean open = true;

	/**
	 * Starts a run, unless closed.
	 * @return whether the run may go on; if so, it must call {@link #end()} when it is over
	 */
	boolean start() {
		this.inProgress.incrementAndGet();
		if (this.open) {
			return true;
		}
		end();
		return false;
	}

	/** Ends a run that {@link #start() started}. */
	void end() {
		// The counter changes before open is read, and close() writes open before it reads the
		// counter: whichever comes second sees the other, so the callback is never missed.
		if (this.inProgress.decrementAndGet() == 0 && !this.open) {
			idle();
		}
	}

	/**
	 * Lets no run start from now on.
	 * @param callback runs once the runs in progress have ended, at once if there are none
	 * @return the number of runs that were in progress
	 */
	int close(Runnable callback) {
		this.whenIdle.set(callback);
		this.open = false;
		int running = this.inProgress.get();
		if (running == 0) {
			idle();
		}
		return running;
	}

	/** Lets runs start again, after {@link #close}. */
	void open() {
		this.whenIdle.set(null);
		this.open = true;
	}

	boolean isOpen() {
		return this.open;
	}

	private void idle() {
		Runnable callback = this.whenIdle.getAndSet(null);
		if (callback != null) {
			callback.run();
		}
	}

}
