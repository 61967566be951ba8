package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.imps.CuratorFrameworkState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.utils.PathUtils;

import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.zookeeper.ZooKeeperLockBackend;

/**
 * The {@code zookeeper} backend, when {@code holdfast.backend=zookeeper} (or, with no backend
 * named and no Redlock nodes, when {@code holdfast.zookeeper.connect-string} is set or a
 * {@link CuratorFramework} bean exists): on the application's {@code CuratorFramework}, else on a
 * client built from {@code holdfast.zookeeper.*}, started here and closed with the context.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnBackend(BackendType.ZOOKEEPER)
@ConditionalOnMissingBean(LockBackend.class)
@EnableConfigurationProperties(HoldfastZooKeeperProperties.class)
class ZooKeeperBackendConfiguration {

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnClass(CuratorFramework.class)
	static class CuratorAvailable {

		@Bean(destroyMethod = "close")
		ZooKeeperLockBackend zooKeeperLockBackend(ObjectProvider<CuratorFramework> clients,
				HoldfastZooKeeperProperties properties, HoldfastProperties holdfastProperties) {
			String basePath = basePath(properties);
			boolean failFast = holdfastProperties.isFailFast();
			List<CuratorFramework> found = clients.stream().toList();
			if (found.size() > 1) {
				CuratorFramework primary = clients.getIfUnique();
				if (primary == null) {
					throw new LockConfigurationException(
							"holdfast.backend=zookeeper found " + found.size()
									+ " CuratorFramework beans and cannot tell which one keeps the locks",
							"Mark the CuratorFramework to use @Primary, or define a ZooKeeperLockBackend bean on it.");
				}
				return onApplicationClient(primary, basePath, failFast);
			}
			if (found.size() == 1) {
				return onApplicationClient(found.get(0), basePath, failFast);
			}
			return onOwnClient(properties, basePath, failFast);
		}

		/**
		 * The zookeeper backend of {@code holdfast.backends.<name>}, built as the default one: on
		 * the client bean it names, else on a client of its own when its connect string is set,
		 * else on the application's only (or primary) client.
		 */
		static ZooKeeperLockBackend named(NamedBackend named) {
			HoldfastZooKeeperProperties properties = named.settings(HoldfastZooKeeperProperties.class);
			String basePath = basePath(properties);
			boolean failFast = named.holdfast().isFailFast();
			if (named.clientName() == null && properties.getConnectString() != null) {
				return onOwnClient(properties, basePath, failFast);
			}
			CuratorFramework client = named.clientIfAny(CuratorFramework.class);
			return (client != null) ? onApplicationClient(client, basePath, failFast)
					: onOwnClient(properties, basePath, failFast);
		}

		private static ZooKeeperLockBackend onApplicationClient(CuratorFramework client, String basePath,
				boolean failFast) {
			if (client.getState() != CuratorFrameworkState.STARTED) {
				throw new LockConfigurationException(
						"The application's CuratorFramework bean is " + client.getState()
								+ ", so Holdfast cannot keep locks with it",
						"Start the client before it is used, e.g. @Bean(initMethod = \"start\", destroyMethod = \"close\").");
			}
			int timeout = client.getZookeeperClient().getConnectionTimeoutMs();
			awaitConnection(client, Duration.ofMillis(timeout), client.getZookeeperClient().getCurrentConnectionString(),
					"the connection timeout of the application's CuratorFramework", failFast);
			return ZooKeeperLockBackend.of(client, basePath);
		}

		private static ZooKeeperLockBackend onOwnClient(HoldfastZooKeeperProperties properties, String basePath,
				boolean failFast) {
			String connectString = properties.getConnectString();
			if (connectString == null || connectString.isBlank()) {
				throw new LockConfigurationException(
						"holdfast.backend=zookeeper is set, but there is no CuratorFramework bean and "
								+ "holdfast.zookeeper.connect-string is empty",
						"Set holdfast.zookeeper.connect-string to the ensemble's servers (e.g. "
								+ "zk-1:2181,zk-2:2181,zk-3:2181), define a CuratorFramework bean, or choose another "
								+ "holdfast.backend (redis, redlock, jdbc, memory).");
			}
			Duration sessionTimeout = positive(properties.getSessionTimeout(), "session-timeout", "30s");
			Duration connectionTimeout = positive(properties.getConnectionTimeout(), "connection-timeout", "5s");
			HoldfastZooKeeperProperties.Retry retry = properties.getRetry();
			positive(retry.getBaseSleepTime(), "retry.base-sleep-time", "100ms");
			positive(retry.getMaxSleepTime(), "retry.max-sleep-time", "1s");
			if (retry.getMaxRetries() < 0 || retry.getMaxRetries() > 29) {
				throw new LockConfigurationException(
						"holdfast.zookeeper.retry.max-retries must be between 0 and 29, was " + retry.getMaxRetries(),
						"Set holdfast.zookeeper.retry.max-retries to a small count, e.g. 3.");
			}
			CuratorFramework client;
			try {
				client = CuratorFrameworkFactory.builder()
					.connectString(connectString)
					.sessionTimeoutMs((int) sessionTimeout.toMillis())
					.connectionTimeoutMs((int) connectionTimeout.toMillis())
					.retryPolicy(new ExponentialBackoffRetry((int) retry.getBaseSleepTime().toMillis(),
							retry.getMaxRetries(), (int) retry.getMaxSleepTime().toMillis()))
					.build();
			}
			catch (IllegalArgumentException ex) {
				throw new LockConfigurationException("Invalid holdfast.zookeeper.connect-string '" + connectString
						+ "': " + ex.getMessage(), "Write it as host:port pairs separated by commas, e.g. zk-1:2181,zk-2:2181.");
			}
			client.start();
			try {
				awaitConnection(client, connectionTimeout, connectString, "holdfast.zookeeper.connection-timeout",
						failFast);
				return ZooKeeperLockBackend.owning(client, basePath);
			}
			catch (RuntimeException ex) {
				client.close();
				throw ex;
			}
		}

		/**
		 * Waits for the client's first connection, so that a reachable ensemble serves the first
		 * lock at once. When none comes within {@code timeout}, the startup fails with
		 * {@code holdfast.fail-fast}; otherwise it goes on, the client keeps connecting, and the
		 * startup probe logs the WARN, as for every backend.
		 */
		private static void awaitConnection(CuratorFramework client, Duration timeout, String connectString,
				String timeoutSetting, boolean failFast) {
			boolean connected;
			try {
				connected = client.blockUntilConnected((int) timeout.toMillis(), TimeUnit.MILLISECONDS);
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
				connected = false;
			}
			if (!connected && failFast) {
				throw LockBackendStartup.unreachable("zookeeper", "not connected to " + connectString + " within "
						+ timeout.toMillis() + " ms (" + timeoutSetting + ")");
			}
		}

		private static String basePath(HoldfastZooKeeperProperties properties) {
			String basePath = properties.getBasePath();
			try {
				PathUtils.validatePath(basePath);
				return basePath;
			}
			catch (IllegalArgumentException ex) {
				throw new LockConfigurationException(
						"Invalid holdfast.zookeeper.base-path '" + basePath + "': " + ex.getMessage(),
						"Set holdfast.zookeeper.base-path to an absolute ZooKeeper path without a trailing slash, "
								+ "e.g. /holdfast.");
			}
		}

		private static Duration positive(Duration value, String property, String example) {
			if (value.isNegative() || value.isZero() || value.toMillis() > Integer.MAX_VALUE) {
				throw new LockConfigurationException(
						"holdfast.zookeeper." + property + " must be a positive duration, was " + value,
						"Set holdfast.zookeeper." + property + " to a positive duration, e.g. " + example + ".");
			}
			return value;
		}

	}

	@Configuration(proxyBeanMethods = false)
	@ConditionalOnMissingClass("org.apache.curator.framework.CuratorFramework")
	static class CuratorMissing {

		@Bean
		LockBackend zooKeeperLockBackend() {
			throw new LockConfigurationException(
					"The zookeeper backend is selected, but Apache Curator (org.apache.curator:curator-framework) "
							+ "is not on the classpath.",
					"Add the org.apache.curator:curator-framework dependency (it brings the ZooKeeper client), or "
							+ "choose another holdfast.backend.");
		}

	}

}
