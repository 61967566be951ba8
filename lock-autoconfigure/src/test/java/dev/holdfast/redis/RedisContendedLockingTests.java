package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Several threads of two instances (two templates over two clients, as two processes would have)
 * contending one key on a real Redis: what the engine's local gate does to try-once callers and to
 * the share of handoffs between instances.
 */
class RedisContendedLockingTests {

	/**
	 * Lease and poll interval: a waiter that missed a release would sleep this long, so only a
	 * release event or the local release can wake it within {@link #WAKE_BOUND}.
	 */
	private static final Duration SLOW_POLL = Duration.ofMinutes(1);

	/** Well under the poll fallback, with slack for a loaded machine. */
	private static final Duration WAKE_BOUND = Duration.ofSeconds(10);

	private static final LockOptions ONCE = LockOptions.defaults().waitTime(Duration.ZERO);

	private static final LockOptions WAIT = LockOptions.defaults().waitTime(SLOW_POLL);

	private static RedisServer server;

	private final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private final List<RedisLockBackend> backends = new ArrayList<>();

	private final List<AutoCloseable> closeables = new ArrayList<>();

	private final List<Thread> threads = new ArrayList<>();

	private final String name = "contended-" + UUID.randomUUID();

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		server.close();
	}

	@AfterEach
	void closeClients() throws Exception {
		for (Thread thread : this.threads) {
			thread.interrupt();
			thread.join(TimeUnit.SECONDS.toMillis(10));
		}
		for (AutoCloseable closeable : this.closeables) {
			closeable.close();
		}
		this.backends.forEach(RedisLockBackend::close);
		this.factories.forEach(LettuceConnectionFactory::destroy);
	}

	@Test
	void tryAcquireReachesTheBackendWhileALocalPeerWaitsForTheLock() throws Exception {
		DefaultLockTemplate instance = newTemplate();
		DefaultLockTemplate other = newTemplate();
		Lease remote = other.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(instance);
		// The lock disappears without an announcement (as when it expires): the waiter sleeps on.
		raw().delete("{" + this.name + "}");
		Optional<Lease> once = instance.tryAcquire(this.name, null, ONCE);
		assertThat(once).as("a try-once caller asks the backend, whatever its local peer does").isPresent();
		assertThat(waiting).isNotDone();
		once.get().close();
		// The waiter wakes on the local release and takes the lock.
		waiting.get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS).close();
		remote.close();
	}

	@Test
	void handoffsOfAContendedLockGoToTheOtherInstanceAboutHalfTheTime() throws Exception {
		List<DefaultLockTemplate> instances = List.of(newTemplate(), newTemplate());
		for (DefaultLockTemplate instance : instances) {
			instance.prepare();
		}
		// The first subscription of a cold JVM can take seconds on a loaded machine.
		await().atMost(Duration.ofSeconds(60))
			.until(() -> instances.stream().allMatch(DefaultLockTemplate::releaseEventsListening));
		int handoffs = 400;
		AtomicInteger acquisitions = new AtomicInteger();
		AtomicInteger cross = new AtomicInteger();
		AtomicInteger last = new AtomicInteger(-1);
		AtomicReference<Throwable> failure = new AtomicReference<>();
		List<Thread> contenders = new ArrayList<>();
		for (int i = 0; i < instances.size(); i++) {
			DefaultLockTemplate instance = instances.get(i);
			int index = i;
			for (int t = 0; t < 3; t++) {
				Thread thread = new Thread(() -> {
					try {
						while (acquisitions.get() < handoffs && failure.get() == null) {
							try (Lease lease = instance.acquire(this.name, null, WAIT)) {
								// Counted while held: no other holder can run this at the same time.
								if (acquisitions.getAndIncrement() > 0 && last.get() != index) {
									cross.incrementAndGet();
								}
								last.set(index);
							}
						}
					}
					catch (Throwable ex) {
						failure.compareAndSet(null, ex);
					}
				});
				contenders.add(thread);
				this.threads.add(thread);
				thread.start();
			}
		}
		for (Thread thread : contenders) {
			thread.join(TimeUnit.MINUTES.toMillis(2));
		}
		assertThat(failure.get()).isNull();
		double share = (double) cross.get() / (acquisitions.get() - 1);
		// Generous bounds: what is counted is the property, not a figure of a loaded machine. A guard
		// against one instance starving (0 %), not a proof of fairness, which only the benchmark shows
		// (docs/benchmarks.md). Before the handoff by Redis: 27-48 % when this class runs alone, 12-27 %
		// after the module's other tests (the releasing instance's next racer answered faster than
		// the announcement travelled). The mechanism is tested by RedisWaiterHandoffTests. Strict
		// turns give 100 %.
		assertThat(share).as("share of handoffs to the other instance").isBetween(0.05, 0.95);
	}

	/** Acquires the lock on another thread, once that thread waits for it (parked, no round trip). */
	private CompletableFuture<Lease> waitInBackground(DefaultLockTemplate instance) {
		CompletableFuture<Lease> acquired = new CompletableFuture<>();
		Thread thread = new Thread(() -> {
			try {
				acquired.complete(instance.acquire(this.name, null, WAIT));
			}
			catch (Throwable ex) {
				acquired.completeExceptionally(ex);
			}
		});
		this.threads.add(thread);
		thread.start();
		await().during(Duration.ofMillis(200))
			.atMost(Duration.ofSeconds(10))
			.until(() -> thread.getState() == Thread.State.TIMED_WAITING);
		return acquired;
	}

	private DefaultLockTemplate newTemplate() {
		LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
		this.factories.add(factory);
		RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
		this.backends.add(backend);
		DefaultLockTemplate template = new DefaultLockTemplate(backend,
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(SLOW_POLL).withPollInterval(SLOW_POLL));
		this.closeables.add(template);
		return template;
	}

	private StringRedisTemplate raw() {
		LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
		this.factories.add(factory);
		return RedisClients.template(factory);
	}

}
