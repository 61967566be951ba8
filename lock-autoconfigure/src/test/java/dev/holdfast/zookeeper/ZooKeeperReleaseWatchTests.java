package dev.holdfast.zookeeper;

import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher.Event.EventType;
import org.apache.zookeeper.Watcher.Event.KeeperState;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.test.server.ZooKeeperServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNoException;
import static org.awaitility.Awaitility.await;

/**
 * The release watch (ZK-10) on one in-process server: a refused attempt writes nothing in the
 * lock's parent, so it fires no other follower's watch, and the engine's own waiters, which wait in
 * the queue, never subscribe.
 */
class ZooKeeperReleaseWatchTests {

	private static ZooKeeperServer server;

	private static CuratorFramework observer;

	private final List<AutoCloseable> closeables = new ArrayList<>();

	private final String key = "holdfast:zk-" + UUID.randomUUID();

	private final String parent = "/holdfast/locks/" + ZooKeeperPaths.encode(this.key);

	@BeforeAll
	static void startServer() {
		server = ZooKeeperServer.start();
		observer = ZooKeeperClients.connect(server.connectString());
	}

	@AfterAll
	static void stopServer() {
		observer.close();
		server.close();
	}

	@AfterEach
	void close() throws Exception {
		for (int i = this.closeables.size() - 1; i >= 0; i--) {
			this.closeables.get(i).close();
		}
	}

	private <T extends AutoCloseable> T closing(T closeable) {
		this.closeables.add(closeable);
		return closeable;
	}

	private ZooKeeperLockBackend backend() {
		return closing(ZooKeeperClients.backend(server.connectString()));
	}

	/**
	 * Two subscribed followers, each with no ensemble time yet and again after it went stale
	 * (1 s): their refused attempts change no child of the parent (its cversion), fire neither's
	 * watch, and leave one watch each; the release then wakes both. Fails where an attempt with a
	 * stale time queues a node to learn the ensemble's time: its create and delete fire the watches.
	 */
	@Test
	void aRefusedAttemptWithAStaleEnsembleTimeWritesNothingInTheParentAndFiresNoWatch() throws Exception {
		ZooKeeperLockBackend holder = backend();
		assertThat(holder.tryAcquire(this.key, "holder", Duration.ofSeconds(30)).acquired()).isTrue();
		List<String> firstWoken = new CopyOnWriteArrayList<>();
		List<String> secondWoken = new CopyOnWriteArrayList<>();
		ZooKeeperLockBackend first = backend();
		ZooKeeperLockBackend second = backend();
		closing(first.subscribe(firstWoken::add));
		closing(second.subscribe(secondWoken::add));
		int children = observer.checkExists().forPath(this.parent).getCversion();

		for (int round = 0; round < 2; round++) {
			if (round > 0) {
				Thread.sleep(1_200); // the ensemble time each stamped goes stale
			}
			assertThat(first.tryAcquire(this.key, "first-" + round, Duration.ofSeconds(30)).acquired()).isFalse();
			assertThat(second.tryAcquire(this.key, "second-" + round, Duration.ofSeconds(30)).acquired()).isFalse();
		}

		assertThat(observer.checkExists().forPath(this.parent).getCversion()).as("children of the parent changed")
			.isEqualTo(children);
		await().during(Duration.ofMillis(500))
			.atMost(Duration.ofSeconds(2))
			.until(() -> firstWoken.isEmpty() && secondWoken.isEmpty());
		assertThat(childWatches(first)).containsExactly(this.parent);
		assertThat(childWatches(second)).containsExactly(this.parent);
		assertThat(holder.release(this.key, "holder")).isTrue();
		await().atMost(Duration.ofSeconds(5)).until(() -> firstWoken.contains(this.key) && secondWoken.contains(this.key));
	}

	/**
	 * A follower keeps trying while the holder renews its 1 s lease every 300 ms, for 3 s, past
	 * the lease it first read: its refused attempts read the holder again rather than queue a node,
	 * so no child of the parent changes and its watch never fires. Fails where a holder's expiry
	 * read once is trusted after it ran out: every attempt then queues a node, whose create and
	 * delete wake every follower, which tries again at once.
	 */
	@Test
	void aFollowerOfAHolderThatRenewsPastItsFirstLeaseQueuesNothing() throws Exception {
		ZooKeeperLockBackend holder = backend();
		assertThat(holder.tryAcquire(this.key, "holder", Duration.ofSeconds(1)).acquired()).isTrue();
		List<String> woken = new CopyOnWriteArrayList<>();
		ZooKeeperLockBackend follower = backend();
		closing(follower.subscribe(woken::add));
		int children = observer.checkExists().forPath(this.parent).getCversion();

		long end = System.nanoTime() + Duration.ofSeconds(3).toNanos();
		long nextRenewal = System.nanoTime();
		while (System.nanoTime() < end) {
			if (System.nanoTime() >= nextRenewal) {
				assertThat(holder.renew(List.of(new HeldLock(this.key, "holder", Duration.ofSeconds(1)))))
					.containsExactly(this.key);
				nextRenewal = System.nanoTime() + Duration.ofMillis(300).toNanos();
			}
			assertThat(follower.tryAcquire(this.key, "follower", Duration.ofSeconds(1)).acquired()).isFalse();
			Thread.sleep(100); // the follower's next attempt, as a poll would make it
		}

		assertThat(observer.checkExists().forPath(this.parent).getCversion()).as("children of the parent changed")
			.isEqualTo(children);
		assertThat(woken).isEmpty();
	}

	/** A template's refused one-shot acquisition on ZooKeeper leaves no watch: its template does not subscribe. */
	@Test
	void aTemplateOnZooKeeperLeavesNoWatch() throws Exception {
		ZooKeeperLockBackend backend = backend();
		DefaultLockTemplate template = closing(new DefaultLockTemplate(backend, LockSettings.defaults()));
		template.prepare();
		String name = "zk-" + UUID.randomUUID();
		String held = template.keyFor(name, null);
		ZooKeeperLockBackend holder = backend();
		assertThat(holder.tryAcquire(held, "holder", Duration.ofSeconds(30)).acquired()).isTrue();


		assertThat(template.tryAcquire(name, null, LockOptions.defaults().waitTime(Duration.ZERO))).isEmpty();

		assertThat(childWatches(backend)).isEmpty();
		assertThat(template.releaseEventsListening()).as("nothing to listen to: the queue wakes waiters").isTrue();
	}

	/** A watched name that decodes to no key (a stray node) reaches no listener and throws nothing on the event thread. */
	@Test
	void aNodeNameThatIsNoKeyThrowsNothingOnTheEventThread() {
		ZooKeeperReleaseWatch watch = new ZooKeeperReleaseWatch("/holdfast/locks");
		List<String> woken = new CopyOnWriteArrayList<>();
		watch.subscribe(woken::add);
		assertThatNoException().isThrownBy(() -> watch.process(
				new WatchedEvent(EventType.NodeChildrenChanged, KeeperState.SyncConnected, "/holdfast/locks/%zz")));
		assertThat(woken).isEmpty();
	}

	/**
	 * The paths the backend's client keeps children watches for (the 4-letter commands list data
	 * watches only): ZooKeeper's own test hook, protected.
	 */
	@SuppressWarnings("unchecked")
	private static List<String> childWatches(ZooKeeperLockBackend backend) throws Exception {
		Method watches = ZooKeeper.class.getDeclaredMethod("getChildWatches");
		watches.setAccessible(true);
		return (List<String>) watches.invoke(backend.client().getZookeeperClient().getZooKeeper());
	}

}
