package dev.holdfast.scheduling;

import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.scheduling.TaskScheduler;

import dev.holdfast.LockBackendException;
import dev.holdfast.core.LockListener;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;

/**
 * The backend operations of scheduled jobs. Jobs talk to the {@link LockBackend} directly rather
 * than through the lock template, because their locks deliberately outlive the run that took
 * them (tick claims until after the next tick, job locks for {@code lockAtLeastFor}): such locks
 * must not stay registered as held leases in this process, where they would be renewed, offered
 * for reentrancy and accumulate one entry per tick.
 */
final class JobLocks {

	private static final Log logger = LogFactory.getLog(JobLocks.class);

	private final LockBackend backend;

	private final BiFunction<String, @Nullable Object, String> keys;

	private final LockListener listener;

	private final TaskScheduler scheduler;

	private final String instance;

	private final AtomicLong counter = new AtomicLong();

	/**
	 * @param keys encodes (name, key) into a backend key, as the lock template does
	 * @param scheduler runs the deferred release of backends that cannot shorten a lock
	 */
	JobLocks(LockBackend backend, BiFunction<String, @Nullable Object, String> keys, LockListener listener,
			TaskScheduler scheduler) {
		this.backend = backend;
		this.keys = keys;
		this.listener = listener;
		this.scheduler = scheduler;
		byte[] random = new byte[12];
		new SecureRandom().nextBytes(random);
		this.instance = "job." + Base64.getUrlEncoder().withoutPadding().encodeToString(random);
	}

	String backendName() {
		return this.backend.name();
	}

	LockListener listener() {
		return this.listener;
	}

	String keyFor(String name, @Nullable Object key) {
		return this.keys.apply(name, key);
	}

	/**
	 * One attempt to take {@code key} for {@code ttl}, never renewed.
	 * @return the lock, or {@code null} if another owner holds it
	 * @throws LockBackendException if the backend failed
	 */
	@Nullable Held tryAcquire(String name, String key, Duration ttl) {
		String owner = this.instance + "." + Long.toString(this.counter.incrementAndGet(), 36);
		long start = System.nanoTime();
		AcquireResult result;
		try {
			result = this.backend.tryAcquire(key, owner, ttl);
		}
		catch (RuntimeException ex) {
			LockBackendException failure = (ex instanceof LockBackendException backendFailure) ? backendFailure
					: new LockBackendException("The " + this.backend.name() + " backend failed to acquire lock '" + key
							+ "': " + ex.getMessage(), ex);
			this.listener.failed(name, this.backend.name(), Duration.ofNanos(System.nanoTime() - start), failure);
			throw failure;
		}
		if (!result.acquired()) {
			return null;
		}
		return new Held(name, key, owner, result.fencingToken(), start, start + ttl.toNanos());
	}

	/** Releases {@code lock} with an owner check; a failure is logged, the lock then expires. */
	void release(Held lock) {
		try {
			this.backend.release(lock.key(), lock.owner());
		}
		catch (RuntimeException ex) {
			logger.warn("Holdfast could not release lock '" + lock.key() + "'; it expires on the backend by itself", ex);
		}
	}

	/**
	 * Keeps {@code lock} for {@code remaining} from now and then lets it go: by setting its time
	 * to live where the backend can, otherwise by releasing it later from the scheduler.
	 */
	void keepFor(Held lock, Duration remaining) {
		if (this.backend instanceof LeaseRenewal renewal) {
			try {
				Set<String> renewed = renewal.renew(List.of(new HeldLock(lock.key(), lock.owner(), remaining)));
				if (!renewed.contains(lock.key())) {
					logger.debug("Holdfast job lock '" + lock.key() + "' had expired before lockAtLeastFor was applied");
				}
			}
			catch (RuntimeException ex) {
				logger.warn("Holdfast could not shorten job lock '" + lock.key()
						+ "' to lockAtLeastFor; it expires after lockAtMostFor", ex);
			}
		}
		else {
			this.scheduler.schedule(() -> release(lock), this.scheduler.getClock().instant().plus(remaining));
		}
	}

	/**
	 * A lock a job took.
	 *
	 * @param name the job name
	 * @param key the backend key
	 * @param owner the owner token of this acquisition
	 * @param fencingToken the backend's fencing token
	 * @param acquiredNanos start of the acquiring request, {@link System#nanoTime()}
	 * @param expiresNanos when the lock expires on the backend at the latest, {@link System#nanoTime()}
	 */
	record Held(String name, String key, String owner, long fencingToken, long acquiredNanos, long expiresNanos) {

		boolean expired(long nowNanos) {
			return nowNanos - this.expiresNanos >= 0;
		}

	}

}
