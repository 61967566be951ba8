package dev.holdfast.autoconfigure;

import java.time.Duration;

import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;

import dev.holdfast.leader.DefaultLeaderElections;

/**
 * Starts the campaigns once the application is ready (every listener of the leadership events
 * registered, the application's own startup done), and stops them first when the context stops:
 * the last phase, so that every term is revoked and its lease released before the web server,
 * the scheduled jobs and the lock engine stop, and another instance takes over at once.
 */
final class LeaderElectionLifecycle implements SmartLifecycle, ApplicationListener<ApplicationReadyEvent> {

	/** How long the stop waits for the revoked events to be delivered and the leases released. */
	private static final Duration HAND_OVER = Duration.ofSeconds(5);

	private final DefaultLeaderElections elections;

	private volatile boolean running;

	private volatile boolean ready;

	LeaderElectionLifecycle(DefaultLeaderElections elections) {
		this.elections = elections;
	}

	@Override
	public void onApplicationEvent(ApplicationReadyEvent event) {
		this.ready = true;
		if (this.running) {
			this.elections.start();
		}
	}

	@Override
	public void start() {
		this.running = true;
		if (this.ready) {
			// A context started again after a stop.
			this.elections.start();
		}
	}

	@Override
	public void stop() {
		this.running = false;
		this.elections.stop(HAND_OVER);
	}

	@Override
	public boolean isRunning() {
		return this.running;
	}

	@Override
	public int getPhase() {
		return Integer.MAX_VALUE;
	}

}
