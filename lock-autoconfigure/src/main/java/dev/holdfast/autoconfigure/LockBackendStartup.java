package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.NestedExceptionUtils;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.spi.BackendHealth;
import dev.holdfast.spi.LockBackend;

/**
 * Gets the lock backend ready without delaying the start, so that the first acquisition does not
 * pay for opening connections and the release subscription:
 * <ul>
 * <li>probes the backend once ({@link BackendHealth#checkHealth()}, bounded by the backend's
 * own timeout) on a thread of its own from its creation, which also opens its connections, while
 * the other beans are created, as the template's release subscription opens (BSL-6, BSL-9);</li>
 * <li>logs one INFO line naming the backend and why it was chosen, when the context starts;</li>
 * <li>without {@code holdfast.fail-fast} waits for nothing: a probe that fails logs a WARN naming
 * the settings to check; with it, waits for the probe, failing the context if the backend does
 * not answer, and for the subscription at most {@link #READY_WAIT}.</li>
 * </ul>
 * Runs once per context, after the connection factories start and before the web server does;
 * when the context stops, it closes the release subscription before the connection factories
 * stop. Destroyed without a stop (a context that failed to start), it interrupts the probe, which
 * then says nothing (BSL-11).
 */
final class LockBackendStartup implements SmartLifecycle, DisposableBean {

	/** After connection factories (phase 0), before the web server starts (DEFAULT_PHASE - 2048). */
	static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

	/** How long a start with fail-fast waits for the subscription once the probe answered. */
	static final Duration READY_WAIT = Duration.ofSeconds(2);

	private static final Log logger = LogFactory.getLog(LockBackendStartup.class);

	private static final long POLL_MILLIS = 5;

	private final DefaultLockTemplate template;

	private final String choice;

	private final boolean failFast;

	/** The named backend's name ({@code holdfast.backends.<name>}), {@code null} for the default one. */
	private final @Nullable String name;

	/** Probes the backend from this bean's creation; {@code null} for a backend without health checks. */
	private final @Nullable Thread prober;

	/** Why the probe found the backend unable to serve locks; {@code null} if it could or has not answered yet. */
	private volatile @Nullable String failure;

	private volatile boolean running;

	/**
	 * Set when the context stops or this bean is destroyed: a probe that fails on the closing
	 * connections then says nothing.
	 */
	private volatile boolean stopped;

	private boolean started;

	/**
	 * @param choice why this backend was chosen, for the INFO line
	 * @param failFast whether an unreachable backend fails the context
	 * @param name the named backend's name, {@code null} for the default backend
	 */
	LockBackendStartup(DefaultLockTemplate template, String choice, boolean failFast, @Nullable String name) {
		this.template = template;
		this.choice = choice;
		this.failFast = failFast;
		this.name = name;
		this.prober = (template.backend() instanceof BackendHealth) ? new Thread(this::probe, "holdfast-startup-probe")
				: null;
		if (this.prober != null) {
			this.prober.setDaemon(true);
			this.prober.start();
		}
	}

	@Override
	public void start() {
		this.running = true;
		if (this.started) {
			this.template.prepare();
			return;
		}
		this.started = true;
		LockBackend backend = this.template.backend();
		logger.info("Holdfast keeps locks in the " + backend.name() + " backend (" + this.choice + ")");
		this.template.prepare();
		if (this.failFast) {
			awaitProbe();
			String failure = this.failure;
			if (failure != null) {
				throw unreachable(shown(backend), failure, settingsOf(backend.name(), this.name));
			}
			awaitSubscription(System.nanoTime() + READY_WAIT.toNanos());
		}
	}

	/** On the prober thread: probes once, and without fail-fast logs a WARN if the backend does not answer. */
	private void probe() {
		LockBackend backend = this.template.backend();
		String failure = probe(backend);
		this.failure = failure;
		if (failure != null && !this.failFast && !this.stopped) {
			logger.warn("Holdfast could not reach its " + shown(backend) + " at startup: " + failure
					+ ". Locks fail with LockBackendException until it answers. Check "
					+ settingsOf(backend.name(), this.name)
					+ "; set holdfast.fail-fast=true to fail the startup instead.");
		}
	}

	/** Checks the backend once; returns why it cannot serve locks, or null. */
	private static @Nullable String probe(LockBackend backend) {
		if (!(backend instanceof BackendHealth health)) {
			return null;
		}
		try {
			BackendHealth.Check check = health.checkHealth();
			return check.up() ? null : "it cannot serve locks " + check.details();
		}
		catch (RuntimeException ex) {
			Throwable cause = NestedExceptionUtils.getMostSpecificCause(ex);
			return (cause != ex) ? ex.getMessage() + " (" + cause.getMessage() + ")" : ex.getMessage();
		}
	}

	/**
	 * The failure of a startup with {@code holdfast.fail-fast=true} whose backend does not answer,
	 * the same for every backend whichever step of the startup found it out.
	 * @param backend the backend's name
	 * @param failure why it cannot serve locks
	 */
	static LockConfigurationException unreachable(String backend, String failure) {
		return unreachable(backend + " backend", failure, settingsOf(backend, null));
	}

	private static LockConfigurationException unreachable(String shown, String failure, String settings) {
		return new LockConfigurationException("Holdfast could not reach its " + shown + " at startup: " + failure,
				"Check " + settings + ", or set holdfast.fail-fast=false to start anyway "
						+ "(locks then fail with LockBackendException until the backend answers).");
	}

	/** {@code jdbc backend}, or {@code backend 'jobs' (jdbc)} for a named one. */
	private String shown(LockBackend backend) {
		return (this.name != null) ? "backend '" + this.name + "' (" + backend.name() + ")"
				: backend.name() + " backend";
	}

	/**
	 * The settings a user checks when the backend does not answer: of the named backend
	 * {@code name}, or of the default one when {@code null}.
	 */
	static String settingsOf(String backend, @Nullable String name) {
		if (name != null) {
			return NamedBackend.PREFIX + "." + name + ".client (the client bean it uses; default: the only or primary"
					+ " one), " + NamedBackend.PREFIX + "." + name + "." + backend + ".* and that its server runs";
		}
		return switch (backend) {
			case "redis" -> "spring.data.redis.* (host and port, or url) and that Redis runs";
			case "redlock" -> "holdfast.redlock.nodes and that the Redis nodes run";
			case "jdbc" -> "spring.datasource.* (url, username, password) and that the database runs";
			case "zookeeper" -> "holdfast.zookeeper.* (or your CuratorFramework bean) and that ZooKeeper runs";
			default -> "the configuration of the " + backend + " backend";
		};
	}

	/** Waits for the probe, which the backend's own timeouts bound. */
	private void awaitProbe() {
		if (this.prober == null) {
			return;
		}
		try {
			this.prober.join();
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new LockConfigurationException("Interrupted while Holdfast probed its " + shown(this.template.backend())
					+ " at startup", "Start the application again.");
		}
	}

	private void awaitSubscription(long deadline) {
		try {
			// Polls: a one-off wait of at most READY_WAIT at startup.
			while (!this.template.releaseEventsListening() && System.nanoTime() - deadline < 0) {
				TimeUnit.MILLISECONDS.sleep(POLL_MILLIS);
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	/**
	 * Closes the template's release subscription before the connection factories stop (they stop
	 * in a later phase): closed after them, the subscription's connection would be closed twice.
	 */
	@Override
	public void stop() {
		this.running = false;
		this.stopped = true;
		this.template.closeReleaseEvents();
	}

	/**
	 * Ends the probe: Spring stops only started lifecycles, so a context that fails to start
	 * destroys this bean without a {@link #stop()}, and the probe must not go on against destroyed
	 * connection factories, nor WARN about them (BSL-11).
	 */
	@Override
	public void destroy() {
		this.stopped = true;
		if (this.prober != null) {
			this.prober.interrupt();
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
