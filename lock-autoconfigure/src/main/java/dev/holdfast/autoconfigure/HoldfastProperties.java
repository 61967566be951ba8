package dev.holdfast.autoconfigure;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.core.Ordered;

/**
 * Configuration of Holdfast distributed locks.
 */
@ConfigurationProperties("holdfast")
public class HoldfastProperties {

	/**
	 * Backend that keeps the locks. When unset: redlock if Redlock nodes are configured, redis if
	 * a RedisConnectionFactory bean exists, jdbc if a DataSource bean exists, otherwise memory
	 * (local to one JVM).
	 */
	private @Nullable BackendType backend;

	/**
	 * Prefix of every lock key on the backend.
	 */
	private String keyPrefix = "holdfast:";

	/**
	 * How long a caller waits for a held lock when the annotation or call does not say. Zero
	 * means one attempt.
	 */
	private Duration waitTime = Duration.ZERO;

	/**
	 * Time to live of a lock on the backend when the annotation or call does not say. Renewed
	 * while the guarded method runs.
	 */
	private Duration leaseTime = Duration.ofSeconds(30);

	/**
	 * Longest pause between two attempts of a waiter. With backends that announce releases
	 * (redis, memory) this is only the fallback for a lost announcement.
	 */
	private Duration pollInterval = Duration.ofMillis(500);

	/**
	 * Longest backend key; longer keys are shortened with a SHA-256 hash.
	 */
	private int maxKeyLength = 200;

	private final Aop aop = new Aop();

	public @Nullable BackendType getBackend() {
		return this.backend;
	}

	public void setBackend(@Nullable BackendType backend) {
		this.backend = backend;
	}

	public String getKeyPrefix() {
		return this.keyPrefix;
	}

	public void setKeyPrefix(String keyPrefix) {
		this.keyPrefix = keyPrefix;
	}

	public Duration getWaitTime() {
		return this.waitTime;
	}

	public void setWaitTime(Duration waitTime) {
		this.waitTime = waitTime;
	}

	public Duration getLeaseTime() {
		return this.leaseTime;
	}

	public void setLeaseTime(Duration leaseTime) {
		this.leaseTime = leaseTime;
	}

	public Duration getPollInterval() {
		return this.pollInterval;
	}

	public void setPollInterval(Duration pollInterval) {
		this.pollInterval = pollInterval;
	}

	public int getMaxKeyLength() {
		return this.maxKeyLength;
	}

	public void setMaxKeyLength(int maxKeyLength) {
		this.maxKeyLength = maxKeyLength;
	}

	public Aop getAop() {
		return this.aop;
	}

	/**
	 * The {@code @DistributedLock} advisor.
	 */
	public static class Aop {

		/**
		 * Order of the lock advisor among other advisors. Lower runs outside: the default runs
		 * outside @Transactional and @Cacheable (both lowest precedence), so the lock is held
		 * for the whole transaction.
		 */
		private int order = Ordered.LOWEST_PRECEDENCE - 100;

		public int getOrder() {
			return this.order;
		}

		public void setOrder(int order) {
			this.order = order;
		}

	}

}
