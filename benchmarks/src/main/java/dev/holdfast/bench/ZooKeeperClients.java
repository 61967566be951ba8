package dev.holdfast.bench;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.zookeeper.curator.ZookeeperCuratorLockProvider;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;

import dev.holdfast.zookeeper.ZooKeeperLockBackend;

/**
 * ZooKeeper contenders, each on its own Curator client (its own session) of the server that
 * {@link Main} started ({@code bench.zookeeper.connect}).
 */
final class ZooKeeperClients {

	private ZooKeeperClients() {
	}

	static LockClient create(String id) throws Exception {
		CuratorFramework client = client();
		return switch (id) {
			case "zookeeper-floor" -> floor(client);
			case "zookeeper-holdfast" -> HoldfastClients.templateClient(
					HoldfastClients.template(ZooKeeperLockBackend.owning(client, "/bench-holdfast")), () -> {
					});
			case "zookeeper-curator" -> curatorMutex(client);
			case "zookeeper-shedlock" -> shedLock(client);
			default -> throw new IllegalArgumentException("Unknown contender " + id);
		};
	}

	static CuratorFramework client() throws InterruptedException {
		String connect = System.getProperty("bench.zookeeper.connect");
		if (connect == null) {
			throw new IllegalStateException("bench.zookeeper.connect is not set");
		}
		CuratorFramework client = CuratorFrameworkFactory.builder()
			.connectString(connect)
			.sessionTimeoutMs(30_000)
			.connectionTimeoutMs(5_000)
			.retryPolicy(new ExponentialBackoffRetry(100, 3, 1000))
			.build();
		client.start();
		if (!client.blockUntilConnected(10, TimeUnit.SECONDS)) {
			client.close();
			throw new IllegalStateException("Could not connect to ZooKeeper at " + connect);
		}
		return client;
	}

	/**
	 * The floor: create an ephemeral node at the key's path (fails if it exists), then delete it;
	 * two round trips, no queue, no fencing, no expiry.
	 */
	static LockClient floor(CuratorFramework client) throws Exception {
		try {
			// a persistent child keeps the container parent, so that every create is one request
			client.create().creatingParentContainersIfNeeded().forPath("/bench-floor/.keep");
		}
		catch (KeeperException.NodeExistsException ex) {
			// created by another client
		}
		return new LockClient() {

			@Override
			public void lockUnlock(String key) throws Exception {
				String path = "/bench-floor/" + key;
				client.create().withMode(CreateMode.EPHEMERAL).forPath(path);
				client.delete().forPath(path);
			}

			@Override
			public Held lock(String key) throws Exception {
				String path = "/bench-floor/" + key;
				// The floor of waiting: retry at once, as often as the round trip allows.
				while (true) {
					try {
						client.create().withMode(CreateMode.EPHEMERAL).forPath(path);
						return () -> client.delete().forPath(path);
					}
					catch (KeeperException.NodeExistsException ex) {
						Thread.onSpinWait();
					}
				}
			}

			@Override
			public Held tryLock(String key) throws Exception {
				String path = "/bench-floor/" + key;
				try {
					client.create().withMode(CreateMode.EPHEMERAL).forPath(path);
					return () -> client.delete().forPath(path);
				}
				catch (KeeperException.NodeExistsException ex) {
					return null;
				}
			}

			@Override
			public void close() {
				client.close();
			}

		};
	}

	/**
	 * Curator's {@code InterProcessMutex}, one per key and client (it is reentrant per thread and
	 * must be released by the thread that acquired it).
	 */
	static LockClient curatorMutex(CuratorFramework client) {
		ConcurrentHashMap<String, InterProcessMutex> mutexes = new ConcurrentHashMap<>();
		return new LockClient() {

			@Override
			public void lockUnlock(String key) throws Exception {
				InterProcessMutex mutex = mutexes.computeIfAbsent(key,
						(k) -> new InterProcessMutex(client, "/bench-curator/" + k));
				if (!mutex.acquire(0, TimeUnit.MILLISECONDS)) {
					throw new IllegalStateException("curator did not acquire " + key);
				}
				mutex.release();
			}

			@Override
			public Held lock(String key) throws Exception {
				// one mutex object per acquisition: the harness's threads share keys, and a shared
				// InterProcessMutex would make them reenter instead of exclude each other
				InterProcessMutex mutex = new InterProcessMutex(client, "/bench-curator/" + key);
				mutex.acquire();
				return mutex::release;
			}

			@Override
			public Held tryLock(String key) throws Exception {
				InterProcessMutex mutex = new InterProcessMutex(client, "/bench-curator/" + key);
				return mutex.acquire(0, TimeUnit.MILLISECONDS) ? mutex::release : null;
			}

			@Override
			public void close() {
				client.close();
			}

		};
	}

	/** ShedLock's Curator provider: {@code lock(configuration)} and {@code unlock()}. */
	static LockClient shedLock(CuratorFramework client) {
		ZookeeperCuratorLockProvider provider = new ZookeeperCuratorLockProvider(client, "/bench-shedlock");
		return new LockClient() {

			@Override
			public void lockUnlock(String key) {
				Optional<SimpleLock> lock = provider
					.lock(new LockConfiguration(Instant.now(), key, Clients.LEASE, Duration.ZERO));
				if (lock.isEmpty()) {
					throw new IllegalStateException("shedlock did not acquire " + key);
				}
				lock.get().unlock();
			}

			@Override
			public Held tryLock(String key) {
				Optional<SimpleLock> lock = provider
					.lock(new LockConfiguration(Instant.now(), key, Clients.LEASE, Duration.ZERO));
				return lock.<Held>map((held) -> held::unlock).orElse(null);
			}

			@Override
			public void close() {
				client.close();
			}

		};
	}

}
