package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The release subscription keeps no thread of its own once open (DESIGN.md, RED-8): its opening
 * thread ends when idle, and releases still reach waiters promptly, on Lettuce's I/O thread.
 */
class RedisSubscriptionThreadsTests {

	/** Lease and poll interval: a waiter that missed the release would sleep this long. */
	private static final Duration SLOW_POLL = Duration.ofMinutes(1);

	/** Well under the poll fallback, with slack for a loaded machine. */
	private static final Duration WAKE_BOUND = Duration.ofSeconds(5);

	private static final Set<String> SUBSCRIPTION_THREADS = Set.of("holdfast-redis-subscribe",
			"holdfast-redis-subscription");

	private static RedisServer server;

	private final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private final List<AutoCloseable> closeables = new ArrayList<>();

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		server.close();
	}

	@AfterEach
	void close() throws Exception {
		for (int i = this.closeables.size() - 1; i >= 0; i--) {
			this.closeables.get(i).close();
		}
		this.factories.forEach(LettuceConnectionFactory::destroy);
	}

	@Test
	void anOpenSubscriptionKeepsNoThreadOfItsOwnAndAReleaseStillWakesAWaiterPromptly() throws Exception {
		// Threads of other tests' backends may live in this JVM: only the ones started here count.
		Set<Thread> before = subscriptionThreads();
		DefaultLockTemplate holder = newTemplate(newBackend());
		RedisLockBackend waiterBackend = newBackend();
		DefaultLockTemplate waiter = newTemplate(waiterBackend);
		waiter.prepare();
		await().atMost(Duration.ofSeconds(10)).until(waiterBackend::isListening);
		await().atMost(RedisReleaseSubscription.IDLE_THREAD_KEEP_ALIVE.plusSeconds(5))
			.alias("the subscription's threads end when idle")
			.until(() -> before.containsAll(subscriptionThreads()));
		assertThat(waiterBackend.isListening()).isTrue();

		String name = "idle-" + UUID.randomUUID();
		Lease held = holder.acquire(name, null, LockOptions.defaults().waitTime(Duration.ZERO));
		CompletableFuture<Long> acquiredAt = new CompletableFuture<>();
		Thread thread = new Thread(() -> {
			try (Lease lease = waiter.acquire(name, null, LockOptions.defaults().waitTime(SLOW_POLL))) {
				acquiredAt.complete(System.nanoTime());
			}
			catch (RuntimeException ex) {
				acquiredAt.completeExceptionally(ex);
			}
		});
		thread.start();
		// Parked: waiting for the lock, not inside a round trip.
		await().during(Duration.ofMillis(100))
			.atMost(Duration.ofSeconds(5))
			.until(() -> thread.getState() == Thread.State.TIMED_WAITING);
		long releasedAt = System.nanoTime();
		held.close();
		long wake = acquiredAt.get(30, TimeUnit.SECONDS) - releasedAt;
		assertThat(Duration.ofNanos(wake)).as("wake-up after release, polling every %s", SLOW_POLL)
			.isLessThan(WAKE_BOUND);
		assertThat(before).as("no thread of the subscription's was needed for it")
			.containsAll(subscriptionThreads());
	}

	@Test
	void afterTheStartupProbeTheFirstNonBlockingCallIsTimedByLettuceAlone() throws Exception {
		NonBlockingRedisLockBackend backend = (NonBlockingRedisLockBackend) newBackend();
		assertThat(backend.timedByLettuce()).as("before any call: the shared connection is not known yet").isFalse();
		backend.checkHealth();
		assertThat(backend.timedByLettuce()).as("after the probe: no timer of the JDK's for the next call (RED-9)")
			.isTrue();
		String key = "probed-" + UUID.randomUUID();
		assertThat(backend.tryAcquireAsync(key, "owner", Duration.ofSeconds(10)).toCompletableFuture()
			.get(10, TimeUnit.SECONDS).acquired()).isTrue();
		assertThat(backend.releaseAsync(key, "owner").toCompletableFuture().get(10, TimeUnit.SECONDS)).isTrue();
	}

	private static Set<Thread> subscriptionThreads() {
		return Thread.getAllStackTraces()
			.keySet()
			.stream()
			.filter((thread) -> SUBSCRIPTION_THREADS.contains(thread.getName()) && thread.isAlive())
			.collect(Collectors.toSet());
	}

	private RedisLockBackend newBackend() {
		LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
		this.factories.add(factory);
		RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
		this.closeables.add(backend);
		return backend;
	}

	private DefaultLockTemplate newTemplate(RedisLockBackend backend) {
		DefaultLockTemplate template = new DefaultLockTemplate(backend,
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(SLOW_POLL).withPollInterval(SLOW_POLL));
		this.closeables.add(template);
		return template;
	}

}
