package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.core.Ordered;

import dev.holdfast.core.LockSettings;

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
	 * Name of this instance where operators see which instance holds a lock or ran a job
	 * (endpoints, the backend's records): 1 to 64 letters, digits or '.', '_', '-', ':', '@',
	 * '/'. Default: '<host>:<server.port>' in a web application on a fixed port, else
	 * '<pid>@<host>'.
	 */
	private @Nullable String instanceName;

	/**
	 * Prefix of every lock key on the backend.
	 */
	private String keyPrefix = LockSettings.DEFAULT_KEY_PREFIX;

	/**
	 * How long a caller waits for a held lock when the annotation or call does not say. Zero
	 * means one attempt.
	 */
	private Duration waitTime = LockSettings.DEFAULT_WAIT_TIME;

	/**
	 * Time to live of a lock on the backend when the annotation or call does not say. Renewed
	 * while the guarded method or the scheduled run lasts.
	 */
	private Duration leaseTime = LockSettings.DEFAULT_LEASE_TIME;

	/**
	 * Longest pause between two attempts of a waiter. With backends that announce releases
	 * (redis, memory) this is only the fallback for a lost announcement.
	 */
	private Duration pollInterval = LockSettings.DEFAULT_POLL_INTERVAL;

	/**
	 * Longest backend key; longer keys are shortened with a SHA-256 hash.
	 */
	private int maxKeyLength = LockSettings.DEFAULT_MAX_KEY_LENGTH;

	/**
	 * Whether the application fails to start when the backend does not answer the probe sent at
	 * startup. Otherwise a WARN is logged and locks fail with LockBackendException until the
	 * backend answers.
	 */
	private boolean failFast;

	/**
	 * Whether WARN logs and exception messages show lock keys as they are. Off: their key part,
	 * which comes from method arguments and may hold user data, reads '******', followed by a
	 * fingerprint of the key ('holdfast:orders:******#3f2a'), the same for equal keys in every
	 * instance, so that a log line can be matched to a locks endpoint entry. The fingerprint
	 * (16 bits of the key's SHA-256) identifies a key; it does not protect a guessable value: one
	 * from a small set (a flag, one of a few tenants) can be found by hashing the candidates. The
	 * locks endpoint follows management.endpoint.locks.show-values instead.
	 */
	private boolean showKeyValues;

	/**
	 * Whether a lease's release is sent without waiting for the backend's answer, where the
	 * backend can release without blocking (Redis on Lettuce): an annotated method or
	 * Lease.close() returns before the release's round trip. A later acquisition of the same
	 * lock from this application still sees the release; failed releases are logged and counted.
	 */
	private boolean releaseInBackground = true;

	/**
	 * Whether a holdfast.* property that Holdfast does not have (a typo, or a property of a newer
	 * version in shared configuration) fails the application at startup. Otherwise it is logged
	 * at WARN.
	 */
	private boolean failOnUnknownProperties = true;

	/**
	 * Further backends, by name (letters, digits and '-'), besides the default one above; an
	 * annotation's or a qualifier's backend name chooses one. Each has a type, and that type's
	 * settings under holdfast.backends.<name>.<type>.* (as under holdfast.<type>.*).
	 */
	private final Map<String, Backend> backends = new LinkedHashMap<>();

	private final Aop aop = new Aop();

	public @Nullable BackendType getBackend() {
		return this.backend;
	}

	public void setBackend(@Nullable BackendType backend) {
		this.backend = backend;
	}

	public @Nullable String getInstanceName() {
		return this.instanceName;
	}

	public void setInstanceName(@Nullable String instanceName) {
		this.instanceName = instanceName;
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

	public boolean isFailFast() {
		return this.failFast;
	}

	public void setFailFast(boolean failFast) {
		this.failFast = failFast;
	}

	public boolean isShowKeyValues() {
		return this.showKeyValues;
	}

	public void setShowKeyValues(boolean showKeyValues) {
		this.showKeyValues = showKeyValues;
	}

	public boolean isReleaseInBackground() {
		return this.releaseInBackground;
	}

	public void setReleaseInBackground(boolean releaseInBackground) {
		this.releaseInBackground = releaseInBackground;
	}

	public boolean isFailOnUnknownProperties() {
		return this.failOnUnknownProperties;
	}

	public void setFailOnUnknownProperties(boolean failOnUnknownProperties) {
		this.failOnUnknownProperties = failOnUnknownProperties;
	}

	public Aop getAop() {
		return this.aop;
	}

	public Map<String, Backend> getBackends() {
		return this.backends;
	}

	/**
	 * A named backend ({@code holdfast.backends.<name>}).
	 */
	public static class Backend {

		/**
		 * Backend that keeps this backend's locks.
		 */
		private @Nullable BackendType type;

		/**
		 * Name of an application LockBackend bean to use as this backend, instead of a type. The
		 * bean must be declared @Bean(defaultCandidate = false), so that it does not replace the
		 * default backend.
		 */
		private @Nullable String bean;

		/**
		 * Name of the client bean it uses: a RedisConnectionFactory (redis), a DataSource (jdbc)
		 * or a CuratorFramework (zookeeper). Default: the application's only (or primary) one; for
		 * zookeeper, a client of its own when holdfast.backends.<name>.zookeeper.connect-string
		 * is set.
		 */
		private @Nullable String client;

		/**
		 * Prefix of this backend's lock keys. Default: holdfast.key-prefix followed by
		 * '<name>::', so that a lock name on two backends sharing one server is two locks.
		 */
		private @Nullable String keyPrefix;

		public @Nullable BackendType getType() {
			return this.type;
		}

		public void setType(@Nullable BackendType type) {
			this.type = type;
		}

		public @Nullable String getBean() {
			return this.bean;
		}

		public void setBean(@Nullable String bean) {
			this.bean = bean;
		}

		public @Nullable String getClient() {
			return this.client;
		}

		public void setClient(@Nullable String client) {
			this.client = client;
		}

		public @Nullable String getKeyPrefix() {
			return this.keyPrefix;
		}

		public void setKeyPrefix(@Nullable String keyPrefix) {
			this.keyPrefix = keyPrefix;
		}

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
