package dev.holdfast.zookeeper;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.curator.framework.CuratorFramework;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockListener;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.test.server.ZooKeeperServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Ensemble faults on a three-server in-process ensemble: the leader killed while a lock is held
 * and waited for, and the quorum lost and regained.
 */
class ZooKeeperEnsembleTests {

	private ZooKeeperServer ensemble;

	private final List<AutoCloseable> closeables = new ArrayList<>();

	@BeforeEach
	void startEnsemble() throws Exception {
		this.ensemble = ZooKeeperServer.startEnsemble(3);
	}

	@AfterEach
	void stopEnsemble() throws Exception {
		for (int i = this.closeables.size() - 1; i >= 0; i--) {
			this.closeables.get(i).close();
		}
		this.ensemble.close();
	}

	private DefaultLockTemplate template(LockListener listener) {
		CuratorFramework client = ZooKeeperClients.connect(this.ensemble.connectString(), Duration.ofSeconds(15),
				Duration.ofSeconds(2));
		ZooKeeperLockBackend backend = ZooKeeperLockBackend.owning(client, "/holdfast");
		this.closeables.add(backend);
		DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults(), listener);
		this.closeables.add(template);
		return template;
	}

	@Test
	void leaderKilledWhileALockIsHeldAndWaitedForKeepsExclusionAndTokensGrow() throws Exception {
		LostLeases lost = new LostLeases();
		DefaultLockTemplate holder = template(lost);
		String name = "zk-" + UUID.randomUUID();
		AtomicInteger inside = new AtomicInteger();
		List<Long> tokens = new ArrayList<>();
		Lease held = holder.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(10)));
		inside.incrementAndGet();
		tokens.add(held.fencingToken());
		ExecutorService pool = Executors.newFixedThreadPool(2);
		try {
			List<Future<?>> waiters = new ArrayList<>();
			for (int i = 0; i < 2; i++) {
				DefaultLockTemplate template = template(LockListener.NONE);
				waiters.add(pool.submit(() -> {
					try (Lease lease = template.acquire(name, null,
							LockOptions.defaults().waitTime(Duration.ofSeconds(60)))) {
						assertThat(inside.incrementAndGet()).as("holders at once").isOne();
						synchronized (tokens) {
							tokens.add(lease.fencingToken());
						}
						inside.decrementAndGet();
					}
				}));
			}
			String parent = "/holdfast/locks/" + ZooKeeperPaths.encode(holder.keyFor(name, null));
			CuratorFramework observer = ZooKeeperClients.connect(this.ensemble.connectString());
			this.closeables.add(observer);
			await().atMost(Duration.ofSeconds(10)).until(() -> observer.getChildren().forPath(parent).size() == 3);

			this.ensemble.stop(this.ensemble.leader());

			// a new leader is elected; the holder's session and node survive, and it holds again
			await().atMost(Duration.ofSeconds(30)).until(held::isValid);
			assertThat(lost.count).hasValue(0);
			assertThat(waiters).noneMatch(Future::isDone);
			inside.decrementAndGet();
			held.close();
			for (Future<?> waiter : waiters) {
				waiter.get(30, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		assertThat(tokens).hasSize(3).isSorted().doesNotHaveDuplicates();
	}

	@Test
	void lostQuorumFailsAcquisitionsClosedWithinTheTimeoutAndRegainedQuorumServesThemAgain() throws Exception {
		DefaultLockTemplate holder = template(LockListener.NONE);
		DefaultLockTemplate other = template(LockListener.NONE);
		String name = "zk-" + UUID.randomUUID();
		Lease held = holder.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(10)));
		this.ensemble.stop(0);
		this.ensemble.stop(1);
		await().atMost(Duration.ofSeconds(10)).until(() -> !held.isValid());
		long start = System.nanoTime();
		assertThatThrownBy(() -> other.tryAcquire("zk-" + UUID.randomUUID(), null,
				LockOptions.defaults().waitTime(Duration.ZERO)))
			.isInstanceOf(LockBackendException.class);
		assertThat(Duration.ofNanos(System.nanoTime() - start)).as("connection timeout 2 s")
			.isLessThan(Duration.ofSeconds(8));

		this.ensemble.restart(0);
		this.ensemble.restart(1);
		await().atMost(Duration.ofSeconds(30)).until(held::isValid);
		// The other client reconnects on its own time (a clean-clone run's attempt right after the
		// holder's got no answer within its timeout): served again means it is answered, refused.
		await().atMost(Duration.ofSeconds(30))
			.ignoreExceptionsInstanceOf(LockBackendException.class)
			.until(() -> other.tryAcquire(name, null, LockOptions.defaults().waitTime(Duration.ZERO)).isEmpty());
		held.close();
		try (Lease next = other.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(10)))) {
			assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
		}
	}

	/** Counts lost leases. */
	static final class LostLeases implements LockListener {

		final AtomicInteger count = new AtomicInteger();

		@Override
		public void leaseLost(String name, String backend) {
			this.count.incrementAndGet();
		}

	}

}
