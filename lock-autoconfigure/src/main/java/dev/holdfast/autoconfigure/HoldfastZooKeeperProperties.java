package dev.holdfast.autoconfigure;

import java.time.Duration;

import org.jspecify.annotations.Nullable;

import org.springframework.boot.context.properties.ConfigurationProperties;

import dev.holdfast.zookeeper.ZooKeeperLockBackend;

/**
 * Configuration of the {@code zookeeper} backend. When the application has a
 * {@code CuratorFramework} bean, Holdfast uses it and only {@code base-path} applies; otherwise
 * Holdfast builds its own client from these properties, started and closed with the context.
 */
@ConfigurationProperties("holdfast.zookeeper")
public class HoldfastZooKeeperProperties {

	/**
	 * Servers of the ZooKeeper ensemble, as host:port pairs separated by commas, for the client
	 * Holdfast builds when the application has no CuratorFramework bean. Setting it also selects
	 * the zookeeper backend when holdfast.backend is unset.
	 */
	private @Nullable String connectString;

	/**
	 * The node under which Holdfast keeps lock and tick nodes (inside the client's namespace, if
	 * it has one).
	 */
	private String basePath = ZooKeeperLockBackend.DEFAULT_BASE_PATH;

	/**
	 * Session timeout asked of the ensemble: how long after this process dies or is cut off its
	 * locks are released. The servers bound it (by default between 2 and 20 ticks of 2 s).
	 */
	private Duration sessionTimeout = Duration.ofSeconds(30);

	/**
	 * How long a lock operation waits for a connection to the ensemble before it fails, and how
	 * long the startup waits for the first connection.
	 */
	private Duration connectionTimeout = Duration.ofSeconds(5);

	/** Retries of an operation interrupted by a connection loss (exponential back-off). */
	private final Retry retry = new Retry();

	public @Nullable String getConnectString() {
		return this.connectString;
	}

	public void setConnectString(@Nullable String connectString) {
		this.connectString = connectString;
	}

	public String getBasePath() {
		return this.basePath;
	}

	public void setBasePath(String basePath) {
		this.basePath = basePath;
	}

	public Duration getSessionTimeout() {
		return this.sessionTimeout;
	}

	public void setSessionTimeout(Duration sessionTimeout) {
		this.sessionTimeout = sessionTimeout;
	}

	public Duration getConnectionTimeout() {
		return this.connectionTimeout;
	}

	public void setConnectionTimeout(Duration connectionTimeout) {
		this.connectionTimeout = connectionTimeout;
	}

	public Retry getRetry() {
		return this.retry;
	}

	/**
	 * Curator's exponential back-off for operations interrupted by a connection loss.
	 */
	public static class Retry {

		/** Pause before the first retry; later pauses grow exponentially. */
		private Duration baseSleepTime = Duration.ofMillis(100);

		/** Longest pause between two retries. */
		private Duration maxSleepTime = Duration.ofSeconds(1);

		/** How often an operation is retried after a connection loss before it fails. */
		private int maxRetries = 3;

		public Duration getBaseSleepTime() {
			return this.baseSleepTime;
		}

		public void setBaseSleepTime(Duration baseSleepTime) {
			this.baseSleepTime = baseSleepTime;
		}

		public Duration getMaxSleepTime() {
			return this.maxSleepTime;
		}

		public void setMaxSleepTime(Duration maxSleepTime) {
			this.maxSleepTime = maxSleepTime;
		}

		public int getMaxRetries() {
			return this.maxRetries;
		}

		public void setMaxRetries(int maxRetries) {
			this.maxRetries = maxRetries;
		}

	}

}
