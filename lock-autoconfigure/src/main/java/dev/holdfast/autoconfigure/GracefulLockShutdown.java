package dev.holdfast.autoconfigure;

import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import org.springframework.context.SmartLifecycle;

import dev.holdfast.core.DefaultLockTemplate;

/**
 * Shuts the lock template down gracefully. When the application context stops, new
 * acquisitions are refused, and the stop phase ends when every held lease has been released and
 * every release sent in the background has been answered by the backend, or
 * when Boot's {@code spring.lifecycle.timeout-per-shutdown-phase} runs out. The template's
 * {@code close()}, called when the context destroys it afterwards, stops renewals; a lease still
 * held then belongs to code that still runs, so it is marked lost (WARN,
 * {@code holdfast.lock.lost}) and left to expire on the backend, never deleted under that code.
 * <p>
 * A context started again after a stop takes new locks again.
 * <p>
 * The phase is after Boot's graceful web shutdown (which lets in-flight requests finish, taking
 * locks as they need) and after {@code @SingleInstanceScheduled} jobs stop starting runs (same
 * phase as the web shutdown; their runs in progress finish there, and their job locks are
 * listed with the held leases meanwhile), and before the web server and connection factories
 * stop.
 */
final class GracefulLockShutdown implements SmartLifecycle {

	/** Between the graceful web shutdown (DEFAULT_PHASE - 1024) and the web server stop (- 2048). */
	static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 1536;

	private static final Log logger = LogFactory.getLog(GracefulLockShutdown.class);

	private static final long POLL_MILLIS = 10;

	private final DefaultLockTemplate template;

	private volatile boolean running;

	GracefulLockShutdown(DefaultLockTemplate template) {
		this.template = template;
	}

	@Override
	public void start() {
		this.template.resumeAcquiring();
		this.running = true;
	}

	@Override
	public void stop() {
		this.running = false;
		this.template.stopAcquiring();
	}

	@Override
	public void stop(Runnable callback) {
		stop();
		int held = this.template.heldLeases().size();
		int releasing = this.template.releasesInFlight();
		if (held == 0 && releasing == 0) {
			callback.run();
			return;
		}
		// Releases in flight are answered within a round trip: waited for, not announced.
		boolean announce = held > 0;
		if (announce) {
			logger.info("Holdfast refuses new locks and waits for " + held + " held lock(s) to be released");
		}
		Thread waiter = new Thread(() -> awaitReleased(callback, announce), "holdfast-shutdown");
		waiter.setDaemon(true);
		waiter.start();
	}

	private void awaitReleased(Runnable callback, boolean announce) {
		try {
			// Polls: a one-off wait at shutdown, no reason to add release hooks to the engine.
			while (!this.template.heldLeases().isEmpty() || this.template.releasesInFlight() > 0) {
				TimeUnit.MILLISECONDS.sleep(POLL_MILLIS);
			}
			if (announce) {
				logger.info("Holdfast: all locks were released");
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		finally {
			callback.run();
		}
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

	@Override
	public int getPhase() {
		return PHASE;
	}

}
