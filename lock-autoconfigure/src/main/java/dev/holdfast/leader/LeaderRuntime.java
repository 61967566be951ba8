package dev.holdfast.leader;

import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.Lease;
import dev.holdfast.LeadershipEvent;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.EngineLease;
import dev.holdfast.core.EngineThreads;
import dev.holdfast.spi.ReleaseEvents;
import dev.holdfast.spi.SessionLeases;
import dev.holdfast.spi.WaiterHandoff;

/**
 * What every group of one {@link DefaultLeaderElections} shares: the template, the timings, the
 * template's timer (timers, campaigns and checks: nothing there blocks or runs a listener), the
 * delivery thread (the event queue of every group, in order) and the campaign thread (the attempts
 * of a backend that cannot acquire without blocking, and the releases of ended terms); each exists
 * only while it has work queued or scheduled (LDR-9).
 */
final class LeaderRuntime {

	private static final Log logger = LogFactory.getLog(DefaultLeaderElections.class);

	/** The lock name of every group's lease: the backend key is {@code <prefix>leader:<group>}. */
	static final String LOCK_NAME = "leader";

	final DefaultLockTemplate template;

	final Duration leaseTime;

	final Duration pollInterval;

	/**
	 * A term not renewed when this much of its validity is left is revoked: a tenth of the lease
	 * time, so that the revoked event is delivered before the lease can expire on the backend.
	 */
	final long revokeMarginNanos;

	private final Consumer<? super LeadershipEvent> publisher;

	/** The template's timer, whose tasks never block (LDR-3). */
	private final EngineThreads timer;

	private final ScheduledThreadPoolExecutor campaignThread;

	/** Delivers every group's events in one queue, so that no listener delays a decision (LDR-4). */
	private final ScheduledThreadPoolExecutor deliveryThread;

	/** Told the key of every release the backend announces, while listening. */
	private final Consumer<String> released;

	private final Object listening = new Object();

	private boolean listen;

	private @Nullable AutoCloseable subscription;

	/** A subscription failed and none opened since (touched on the campaign thread only). */
	private boolean subscribeFailing;

	LeaderRuntime(DefaultLockTemplate template, Duration leaseTime, Consumer<? super LeadershipEvent> publisher,
			Consumer<String> released) {
		this.released = released;
		this.template = template;
		this.leaseTime = leaseTime;
		this.pollInterval = template.settings().pollInterval();
		this.revokeMarginNanos = leaseTime.toNanos() / 10;
		this.publisher = publisher;
		this.timer = template.threads();
		this.campaignThread = EngineThreads.onDemand("holdfast-leader-campaign-" + template.backendName());
		this.deliveryThread = EngineThreads.onDemand("holdfast-leader-events-" + template.backendName());
	}

	Clock clock() {
		return this.template.clock();
	}

	/**
	 * One campaign attempt for {@code group}, started on the campaign thread (the acquisition
	 * calls the template's listeners, which must not run on the timer): on a non-blocking backend
	 * an acquisition that waits up to the lease time (a waiter the backend can hand the lock to),
	 * else one try-once attempt. Completes with the lease, {@code null} if not acquired, or
	 * exceptionally; cancelling it cancels the acquisition, and a lease that arrives after the
	 * cancel is released.
	 */
	CompletableFuture<@Nullable Lease> attempt(String group) {
		LockOptions options = LockOptions.defaults().leaseTime(this.leaseTime).renew(true);
		CompletableFuture<@Nullable Lease> result = new CompletableFuture<>();
		this.campaignThread.execute(() -> {
			if (result.isDone()) {
				return;
			}
			try {
				if (this.template.supportsNonBlocking()) {
					CompletableFuture<@Nullable Lease> waiting = this.template.tryAcquireAsync(LOCK_NAME, group,
							options.waitTime(this.leaseTime));
					// A cancel calls the template's listeners: never on the timer that cancels.
					result.whenComplete((lease, ex) -> {
						if (result.isCancelled()) {
							onCampaignThread(() -> waiting.cancel(false));
						}
					});
					waiting.whenComplete((lease, ex) -> {
						if (ex != null) {
							result.completeExceptionally(ex);
						}
						else if (!result.complete(lease) && lease != null) {
							release(lease);
						}
					});
					return;
				}
				Lease lease = this.template.tryAcquire(LOCK_NAME, group, options.waitTime(Duration.ZERO)).orElse(null);
				if (lease != null) {
					// The term outlives this call: the campaign thread must not reenter it.
					EngineLease.detach(lease);
				}
				if (!result.complete(lease) && lease != null) {
					lease.close();
				}
			}
			catch (RuntimeException | Error ex) {
				result.completeExceptionally(ex);
			}
		});
		return result;
	}

	/** Runs {@code task} on the campaign thread, or here once the elections closed. */
	private void onCampaignThread(Runnable task) {
		try {
			this.campaignThread.execute(task);
		}
		catch (RejectedExecutionException ex) {
			task.run();
		}
	}

	/**
	 * Followers that attempt once at a time (a backend without non-blocking acquisition) wake when
	 * the backend announces a release of their key: subscribes once the backend announces releases
	 * (PostgreSQL only knows after its first call), while listening is on. Does not block.
	 */
	void listenForReleases() {
		if (this.template.supportsNonBlocking() || !wokenByReleases()) {
			return;
		}
		synchronized (this.listening) {
			if (!this.listen || this.subscription != null) {
				return;
			}
		}
		try {
			// Subscribing may block (PostgreSQL's LISTEN, Redlock's nodes): on the campaign thread, one
			// at a time, outside the monitor.
			this.campaignThread.execute(() -> {
				synchronized (this.listening) {
					if (!this.listen || this.subscription != null) {
						return;
					}
				}
				AutoCloseable opened;
				try {
					opened = ((ReleaseEvents) this.template.backend()).subscribe(this.released);
				}
				catch (RuntimeException ex) {
					// WARN once until a subscription opens; every attempt tries again.
					if (!this.subscribeFailing) {
						this.subscribeFailing = true;
						logger.warn("Leader groups could not listen for releases on the " + this.template.backendName()
								+ " backend; followers poll every " + this.pollInterval.toMillis()
								+ " ms until a later attempt subscribes", ex);
					}
					else {
						logger.debug("Leader groups still cannot listen for releases", ex);
					}
					return;
				}
				this.subscribeFailing = false;
				synchronized (this.listening) {
					if (this.listen && this.subscription == null) {
						this.subscription = opened;
						return;
					}
				}
				closeQuietly(opened);
			});
		}
		catch (RejectedExecutionException ex) {
			// The elections closed: nothing to listen for.
		}
	}

	/**
	 * Whether a release wakes followers now: their attempt is a waiting acquisition (a
	 * non-blocking backend), or the backend announces releases to try-once attempts (not Redis's
	 * reservations, which only a recorded waiter gets: RHO-1).
	 */
	boolean wokenByReleases() {
		return this.template.supportsNonBlocking() || (this.template.backend() instanceof ReleaseEvents events
				&& !(events instanceof WaiterHandoff) && events.announcesReleases());
	}

	/**
	 * How long a yielder stays out of the race, so that another instance wins it: 1 s where
	 * followers wake on releases, else two poll intervals (a poller's turn), and never less.
	 */
	long yieldHoldOffNanos() {
		long second = Duration.ofSeconds(1).toNanos();
		return wokenByReleases() ? second : Math.max(second, 2 * this.pollInterval.toNanos());
	}

	/** Turns listening for releases on (subscribing as soon as the backend can) or off. */
	void listening(boolean on) {
		AutoCloseable closing;
		synchronized (this.listening) {
			this.listen = on;
			closing = on ? null : this.subscription;
			if (!on) {
				this.subscription = null;
			}
		}
		if (on) {
			listenForReleases();
		}
		else if (closing != null) {
			closeQuietly(closing);
		}
	}

	private static void closeQuietly(AutoCloseable subscription) {
		try {
			subscription.close();
		}
		catch (Exception ex) {
			logger.debug("Could not close the release subscription of leader groups", ex);
		}
	}

	/**
	 * Releases an ended term's lease, on the campaign thread: after what was queued before; after
	 * {@link #shutdown()} on the calling thread.
	 */
	void release(Lease lease) {
		try {
			this.campaignThread.execute(() -> close(lease));
		}
		catch (RejectedExecutionException ex) {
			close(lease);
		}
	}

	private static void close(Lease lease) {
		try {
			lease.close();
		}
		catch (RuntimeException failure) {
			logger.warn("Could not release the lease of an ended term of a leader group", failure);
		}
	}

	/** Whether the backend says that no lease can be trusted now (a ZooKeeper connection suspended). */
	boolean backendSuspended() {
		return this.template.backend() instanceof SessionLeases sessions && sessions.suspended();
	}

	/** How long the backend still vouches for this process's leases whatever their expiresAt (ZK-8). */
	long vouchedNanos() {
		return (this.template.backend() instanceof SessionLeases sessions) ? sessions.vouchedNanos() : Long.MAX_VALUE;
	}

	/** A poll pause: the poll interval plus up to a quarter of it, never shorter. */
	long pollNanos() {
		long poll = this.pollInterval.toNanos();
		return poll + ThreadLocalRandom.current().nextLong(poll / 4 + 1);
	}

	/** Runs {@code task} on the timer after {@code delayNanos}; {@code null} once the template is closed. */
	@Nullable ScheduledFuture<?> schedule(Runnable task, long delayNanos) {
		try {
			return this.timer.schedule(task, delayNanos);
		}
		catch (RejectedExecutionException ex) {
			return null;
		}
	}

	/** Runs {@code task} on the timer, after every task queued before it. */
	void execute(Runnable task) {
		this.timer.execute(task);
	}

	/**
	 * Runs {@code delivery} on the delivery thread, after every delivery queued before it; WARNs
	 * when it still runs after the revocation margin (a listener blocks: events of every group,
	 * role beans' stops among them, wait behind it).
	 */
	void enqueue(Runnable delivery) {
		this.deliveryThread.execute(() -> {
			Thread delivering = Thread.currentThread();
			ScheduledFuture<?> watch = null;
			try {
				watch = this.timer.schedule(() -> logger.warn("A leadership listener still runs after "
						+ TimeUnit.NANOSECONDS.toMillis(this.revokeMarginNanos) + " ms; later events of every group wait"
						+ " behind it: " + describe(delivering.getStackTrace())), this.revokeMarginNanos);
			}
			catch (RejectedExecutionException ex) {
				// Closing: nothing to watch with.
			}
			try {
				delivery.run();
			}
			catch (RuntimeException ex) {
				// The executor would keep it to itself.
				logger.error("Delivering a leadership event failed", ex);
			}
			finally {
				if (watch != null) {
					watch.cancel(false);
				}
			}
		});
	}

	private static String describe(StackTraceElement[] stack) {
		return (stack.length > 0) ? "at " + stack[0] + ((stack.length > 1) ? ", " + stack[1] : "") : "(no stack)";
	}

	/**
	 * Delivers {@code event} to {@code listeners}, then publishes it; nothing they throw stops the
	 * others.
	 * @return whether none of them threw
	 */
	boolean deliver(List<Consumer<? super LeadershipEvent>> listeners, LeadershipEvent event) {
		boolean delivered = true;
		for (Consumer<? super LeadershipEvent> listener : listeners) {
			try {
				listener.accept(event);
			}
			catch (RuntimeException ex) {
				delivered = false;
				logger.warn("Leadership listener " + listener + " failed on " + event, ex);
			}
		}
		try {
			this.publisher.accept(event);
		}
		catch (RuntimeException ex) {
			delivered = false;
			logger.warn("A listener of " + event + " failed", ex);
		}
		return delivered;
	}

	/**
	 * Ends a revoked term whose listeners failed (work that may still run as leader): its lease is
	 * not released but left to expire on the backend, so that no other instance leads meanwhile
	 * (LDR-8).
	 */
	void leaveToExpire(Term ended) {
		logger.warn("A listener of the revocation of " + ended + " failed: its lease is not released but left to expire"
				+ " on the backend by " + ended.lease().expiresAt() + ", so that no other instance leads meanwhile");
		if (ended.lease() instanceof EngineLease engineLease) {
			engineLease.forget();
		}
		else {
			release(ended.lease());
		}
	}

	/**
	 * Waits, at most {@code timeout}, until what the timer, the delivery thread and then the
	 * campaign thread have queued so far has run: revoked events delivered, then their leases
	 * released.
	 */
	boolean drain(Duration timeout) throws InterruptedException {
		CompletableFuture<Void> done = new CompletableFuture<>();
		try {
			this.timer.execute(() -> this.deliveryThread
				.execute(() -> this.campaignThread.execute(() -> done.complete(null))));
			done.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
			return true;
		}
		catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException
				| java.util.concurrent.RejectedExecutionException ex) {
			return false;
		}
	}

	/**
	 * Ends the delivery and campaign threads once what they have queued ran (revoked events, then
	 * releases), each waited for at most 5 s. The groups, closed, set no timer any more; the
	 * template's timer is the template's to end.
	 */
	void shutdown() {
		try {
			this.deliveryThread.shutdown();
			if (!this.deliveryThread.awaitTermination(5, TimeUnit.SECONDS)) {
				logger.warn("Leader events still being delivered 5 s after the elections closed; not waiting longer");
			}
			this.campaignThread.shutdown();
			if (!this.campaignThread.awaitTermination(5, TimeUnit.SECONDS)) {
				logger.warn("Leader leases still being released 5 s after the elections closed; not waiting longer");
			}
		}
		catch (InterruptedException ex) {
			this.deliveryThread.shutdown();
			this.campaignThread.shutdown();
			Thread.currentThread().interrupt();
		}
	}

}
