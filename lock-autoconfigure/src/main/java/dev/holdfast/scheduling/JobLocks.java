package dev.holdfast.scheduling;

import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import org.apache.commons.logging.Log;
import org.apache.commons.logging.LogFactory;
import org.jspecify.annotations.Nullable;

import org.springframework.scheduling.TaskScheduler;

import dev.holdfast.LockBackendException;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockListener;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.TickClaims;

/**
 * The backend operations of scheduled jobs. Jobs talk to the {@link LockBackend} directly rather
 * than through the lock template, because their locks deliberately outlive the run that took
 * them (tick claims until after the next tick, job locks for {@code lockAtLeastFor}): such locks
 * must not stay registered as held leases in this process, where they would be renewed, offered
 * for reentrancy and accumulate one entry per tick. While a run holds its job lock, the lock is
 * {@linkplain DefaultLockTemplate#listHeld listed} with the template's leases, so that the
 * {@code locks} endpoint shows it, and the method reads it from {@link dev.holdfast.LockContext}
 * as a {@link JobLease}.
 */
final class JobLocks {

	private static final Log logger = LogFactory.getLog(JobLocks.class);

	private final DefaultLockTemplate template;

	private final LockBackend backend;

	private final LockListener listener;

	private final TaskScheduler scheduler;

	private final String instance;

	private final AtomicLong counter = new AtomicLong();

	/**
	 * @param template the template whose backend, keys and list of held leases jobs use
	 * @param scheduler runs the deferred release of backends that cannot shorten a lock
	 */
	JobLocks(DefaultLockTemplate template, LockListener listener, TaskScheduler scheduler) {
		this.template = template;
		this.backend = template.backend();
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
		return this.template.keyFor(name, key);
	}

	/**
	 * One attempt to take {@code key} for {@code ttl}, never renewed.
	 * @return the lock, or {@code null} if another owner holds it
	 * @throws LockBackendException if the backend failed
	 */
	@Nullable Held tryAcquire(String name, String key, Duration ttl) {
		String owner = this.instance + "." + Long.toString(this.counter.incrementAndGet(), 36);
		long start = System.nanoTime();
		AcquireResult result = call(name, "acquire lock '" + key + "'", start,
				() -> this.backend.tryAcquire(key, owner, ttl));
		if (!result.acquired()) {
			return null;
		}
		return new Held(name, key, owner, result.fencingToken(), start, start + ttl.toNanos(), validUntil(start, ttl));
	}

	/**
	 * Until when a lock taken or extended for {@code ttl} by a request sent at {@code startNanos}
	 * is held for sure, allowing for the backend's clock drift; {@link System#nanoTime()}.
	 */
	long validUntil(long startNanos, Duration ttl) {
		return startNanos + ttl.toNanos() - this.backend.clockDriftAllowance(ttl).toNanos();
	}

	/** This JVM's wall clock, the template's, for display. */
	Instant now() {
		return this.template.settings().clock().instant();
	}

	/** Whether the backend records tick claims in one entry per job ({@link TickClaims}). */
	boolean claimsTicks() {
		return this.backend instanceof TickClaims;
	}

	/**
	 * Claims {@code tick} of job {@code name} on a backend that {@link #claimsTicks()}.
	 * @return whether this instance claimed the tick
	 * @throws LockBackendException if the backend failed
	 */
	boolean claimTick(String name, Instant tick, Duration ttl) {
		TickClaims claims = (TickClaims) this.backend;
		String key = keyFor(name, null);
		return call(name, "claim tick " + tick + " of lock '" + key + "'", System.nanoTime(),
				() -> claims.claimTick(key, tick, ttl));
	}

	/**
	 * Lists {@code lease} with the template's held leases until the returned action runs.
	 */
	Runnable list(JobLease lease) {
		return this.template.listHeld(lease::info);
	}

	private <T> T call(String name, String operation, long start, Supplier<T> call) {
		try {
			return call.get();
		}
		catch (RuntimeException ex) {
			String message = "The " + this.backend.name() + " backend failed to " + operation + ": " + ex.getMessage();
			LockBackendException failure = (ex instanceof LockBackendException backendFailure) ? backendFailure
					: new LockBackendException(message, ex);
			this.listener.failed(name, this.backend.name(), Duration.ofNanos(System.nanoTime() - start), failure);
			throw failure;
		}
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
		if (this.backend instanceof LeaseRenewal) {
			try {
				if (!renew(lock, remaining)) {
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
	 * Sets the time to live of {@code lock} to {@code ttl} from now, if its owner still holds it.
	 * @return whether the lock was still held and now lives for {@code ttl}
	 * @throws UnsupportedOperationException if the backend cannot set a lock's time to live
	 * @throws LockBackendException if the backend failed
	 */
	boolean renew(Held lock, Duration ttl) {
		if (!(this.backend instanceof LeaseRenewal renewal)) {
			throw new UnsupportedOperationException("The " + this.backend.name() + " backend cannot extend leases");
		}
		return call(lock.name(), "extend lock '" + lock.key() + "'", System.nanoTime(),
				() -> renewal.renew(List.of(new HeldLock(lock.key(), lock.owner(), ttl))).contains(lock.key()));
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
	 * @param validUntilNanos until when it is held for sure, allowing for clock drift
	 */
	record Held(String name, String key, String owner, long fencingToken, long acquiredNanos, long expiresNanos,
			long validUntilNanos) {

		boolean expired(long nowNanos) {
			return nowNanos - this.expiresNanos >= 0;
		}

	}

}
