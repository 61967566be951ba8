package dev.holdfast.leader;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;

import dev.holdfast.LeaderElections;
import dev.holdfast.Leadership;
import dev.holdfast.LeadershipEvent;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.spi.SessionLeases;

/**
 * Leader elections on one {@link DefaultLockTemplate}: leading group G is holding the template's
 * lease of lock {@code leader} with key G ({@code <prefix>leader:<G>}), renewed with the
 * template's other leases. Groups campaign once {@link #start() started}; {@link #stop()} revokes
 * every term (SHUTDOWN), releases their leases and pauses the campaigns until started again.
 * For all groups: the template's timer (timers, campaigns, checks; shared with its renewals), the
 * delivery thread (events in order) and the campaign thread (attempts, subscriptions and releases:
 * what calls the backend or the template's listeners), each started by its first task and ended
 * 1 s idle (LDR-9). See
 * DESIGN.md, Leadership.
 */
public final class DefaultLeaderElections implements LeaderElections, AutoCloseable {

	private static final Log logger = LogFactory.getLog(DefaultLeaderElections.class);

	private final LeaderRuntime runtime;

	/** The groups joined and not closed; as many as the application names. */
	private final ConcurrentHashMap<String, ElectedLeadership> groups = new ConcurrentHashMap<>();

	/** The same, by backend key, for release events. */
	private final ConcurrentHashMap<String, ElectedLeadership> byKey = new ConcurrentHashMap<>();

	private final Object lifecycle = new Object();

	/** The backend's lost and suspended signals (ZooKeeper), closed with the elections. */
	private final List<AutoCloseable> sessionSignals;

	private boolean running;

	private boolean closed;

	/** Told of every group joined ({@link #onJoin}): meters. */
	private final List<Consumer<? super Leadership>> joinListeners = new CopyOnWriteArrayList<>();

	/**
	 * @param template the engine whose leases make the terms
	 * @param leaseTime the time to live of a term's lease: how long a killed leader keeps the
	 * group, and the longest a leader cut off from the backend stays leader
	 * @param publisher receives every event after the leaderships' own listeners (an
	 * application's event publisher)
	 */
	public DefaultLeaderElections(DefaultLockTemplate template, Duration leaseTime,
			Consumer<? super LeadershipEvent> publisher) {
		if (leaseTime.isNegative() || leaseTime.isZero()) {
			throw new IllegalArgumentException("The lease time of leader groups must be positive, was " + leaseTime);
		}
		this.runtime = new LeaderRuntime(template, leaseTime, publisher, this::released);
		if (template.backend() instanceof SessionLeases sessions) {
			this.sessionSignals = List.of(sessions.onLost((key, owner, reason) -> leaseLost(LeaderRuntime.LOCK_NAME)),
					sessions.onSuspended(() -> leaseLost(LeaderRuntime.LOCK_NAME)));
		}
		else {
			this.sessionSignals = List.of();
		}
	}

	/**
	 * A lease of lock {@code name} was lost ({@link dev.holdfast.LockListener#leaseLost}): when it
	 * is {@code leader}, every group checks its term at once instead of at its next check (LDR-3).
	 * Does not block.
	 */
	public void leaseLost(String name) {
		if (LeaderRuntime.LOCK_NAME.equals(name)) {
			this.groups.values().forEach(ElectedLeadership::checkNow);
		}
	}

	@Override
	public Leadership join(String group) {
		if (group.isEmpty()) {
			throw new IllegalArgumentException("A leader group's name must not be empty");
		}
		if (group.indexOf('/') >= 0) {
			// leaders/{backend}/{group} of the leaders endpoint would read it as a group of a named backend
			throw new IllegalArgumentException("Leader group '" + group + "' contains '/', which the leaders endpoint"
					+ " reads as <backend>/<group>: name it with another separator, such as '" + group.replace('/', '.')
					+ "'");
		}
		ElectedLeadership joined = this.groups.get(group);
		if (joined != null && !joined.isClosed()) {
			// Every @LeaderOnly call comes here: no key encoding, no lock.
			return joined;
		}
		String key = this.runtime.template.keyFor(LeaderRuntime.LOCK_NAME, group);
		synchronized (this.lifecycle) {
			if (this.closed) {
				throw new IllegalStateException("Leader elections are closed: group '" + group + "' was not joined");
			}
			ElectedLeadership existing = this.groups.get(group);
			if (existing != null && !existing.isClosed()) {
				return existing;
			}
			ElectedLeadership[] created = new ElectedLeadership[1];
			created[0] = new ElectedLeadership(group, this.runtime, () -> {
				this.groups.remove(group, created[0]);
				this.byKey.remove(key, created[0]);
			});
			this.groups.put(group, created[0]);
			this.byKey.put(key, created[0]);
			this.joinListeners.forEach((listener) -> listener.accept(created[0]));
			if (this.running) {
				created[0].start();
			}
			return created[0];
		}
	}

	/**
	 * Calls {@code listener} with every group joined and not closed, now, and with every group
	 * joined later, when it is joined; it must not block.
	 */
	public void onJoin(Consumer<? super Leadership> listener) {
		List<ElectedLeadership> joined;
		synchronized (this.lifecycle) {
			this.joinListeners.add(listener);
			joined = new ArrayList<>(this.groups.values());
		}
		joined.forEach(listener);
	}

	/** The groups joined and not closed. */
	public List<Leadership> leaderships() {
		return new ArrayList<>(this.groups.values());
	}

	/** Starts campaigning in every group joined, and in groups joined later. */
	public void start() {
		List<ElectedLeadership> joined;
		synchronized (this.lifecycle) {
			if (this.closed || this.running) {
				return;
			}
			this.running = true;
			this.runtime.listening(true);
			joined = new ArrayList<>(this.groups.values());
		}
		joined.forEach(ElectedLeadership::start);
	}

	/**
	 * Revokes every current term ({@code SHUTDOWN}), waits at most {@code timeout} for the
	 * revoked events to be delivered and the leases released, so that other instances take
	 * over at once, and pauses the campaigns until {@link #start()}.
	 */
	public void stop(Duration timeout) {
		List<ElectedLeadership> joined;
		synchronized (this.lifecycle) {
			if (!this.running) {
				return;
			}
			this.running = false;
			this.runtime.listening(false);
			joined = new ArrayList<>(this.groups.values());
		}
		joined.forEach(ElectedLeadership::suspend);
		try {
			if (!this.runtime.drain(timeout)) {
				logger.warn("Leader groups were not all handed over within " + timeout.toMillis()
						+ " ms; their leases expire on the backend by themselves");
			}
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

	/** Whether the groups campaign. */
	public boolean isRunning() {
		synchronized (this.lifecycle) {
			return this.running;
		}
	}

	/** Stops as {@link #stop(Duration)} does (at most 5 s), leaves every group and ends the threads. */
	@Override
	public void close() {
		synchronized (this.lifecycle) {
			if (this.closed) {
				return;
			}
		}
		stop(Duration.ofSeconds(5));
		List<ElectedLeadership> joined;
		synchronized (this.lifecycle) {
			this.closed = true;
			joined = new ArrayList<>(this.groups.values());
		}
		joined.forEach(ElectedLeadership::close);
		try {
			this.runtime.drain(Duration.ofSeconds(5));
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		for (AutoCloseable signal : this.sessionSignals) {
			try {
				signal.close();
			}
			catch (Exception ex) {
				logger.debug("Could not stop listening to the backend's session", ex);
			}
		}
		this.runtime.shutdown();
	}

	private void released(String key) {
		ElectedLeadership leadership = this.byKey.get(key);
		if (leadership != null) {
			leadership.wake();
		}
	}

}
