package dev.holdfast.actuate;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.ClusterLocks.BackendLock;

/**
 * The holders of the leader leases of the groups an instance follows, read for the
 * {@code leaders} endpoint: those keys alone ({@link ClusterLocks#lock}), on one daemon thread
 * (ended when idle), one read out at a time, awaited by the caller at most {@link #WAIT}. A read
 * still out when the wait ends is joined by the next caller, never doubled, so a hung backend
 * holds one thread and no caller. A failure or a wait that ends is logged at WARN once per outage.
 */
final class LeaderInstances {

	/** How long a caller waits for the backend's answer. */
	static final Duration WAIT = Duration.ofSeconds(1);

	private static final Log logger = LogFactory.getLog(LeadersEndpoint.class);

	private final ClusterLocks locks;

	private final ThreadPoolExecutor reads;

	private final AtomicBoolean outage = new AtomicBoolean();

	private @Nullable CompletableFuture<Map<String, Optional<BackendLock>>> pending;

	LeaderInstances(ClusterLocks locks) {
		this.locks = locks;
		this.reads = new ThreadPoolExecutor(1, 1, 1, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), (task) -> {
			Thread thread = new Thread(task, "holdfast-leaders-endpoint");
			thread.setDaemon(true);
			return thread;
		});
		this.reads.allowCoreThreadTimeOut(true);
	}

	/**
	 * The holder of each key (empty: none), as the backend answered within {@link #WAIT}; a key
	 * the backend did not answer for is missing.
	 */
	Map<String, Optional<BackendLock>> read(List<String> keys) {
		if (keys.isEmpty()) {
			return Map.of();
		}
		try {
			Map<String, Optional<BackendLock>> read = start(keys).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
			if (this.outage.compareAndSet(true, false)) {
				logger.info("The leaders endpoint reads the leader leases of the backend again");
			}
			return read;
		}
		catch (TimeoutException ex) {
			unavailable("no answer within " + WAIT.toMillis() + " ms", null);
		}
		catch (ExecutionException ex) {
			unavailable(String.valueOf(ex.getCause()), ex.getCause());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
		return Map.of();
	}

	/** The read out, or a new one when none is: no I/O here, only a task handed to the thread. */
	private synchronized CompletableFuture<Map<String, Optional<BackendLock>>> start(List<String> keys) {
		CompletableFuture<Map<String, Optional<BackendLock>>> pending = this.pending;
		if (pending == null || pending.isDone()) {
			pending = CompletableFuture.supplyAsync(() -> {
				Map<String, Optional<BackendLock>> holders = new HashMap<>();
				for (String key : keys) {
					holders.put(key, Optional.ofNullable(this.locks.lock(key)));
				}
				return holders;
			}, this.reads);
			this.pending = pending;
		}
		return pending;
	}

	private void unavailable(String why, @Nullable Throwable ex) {
		String message = "The leaders endpoint could not read who leads the groups this instance follows (" + why
				+ "): shown as " + LeadersEndpoint.LeaderInstanceStatus.UNAVAILABLE;
		if (this.outage.compareAndSet(false, true)) {
			logger.warn(message + " until the backend answers (logged once per outage)", ex);
		}
		else {
			logger.debug(message, ex);
		}
	}

}
