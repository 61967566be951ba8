package dev.holdfast.redis;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.Lease;
import dev.holdfast.LockListener;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.test.server.BlackholeProxy;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A lease taken through a handoff never counts more time than Redis gives its lock (ENG-1): right
 * after the acquisition, the lease's remaining validity ({@code expiresAt - now}) is at most the
 * lock's {@code PTTL} read just after it. Two templates over two clients, as two processes:
 * {@code here}'s connections go through a proxy that can hold back what Redis sends to it and let
 * it through later, the subscription's bytes first, as a stalled subscription delivers a
 * handoff's message late; {@code elsewhere} talks to Redis directly.
 * <p>
 * The scenario that broke it (issue 29, D1): {@code here} holds a lease that it has lost (its
 * lock was deleted and taken by {@code elsewhere}; {@code extend} found it gone) while a thread
 * of {@code here} waits for the key. {@code elsewhere} releases and the lock goes to that waiter,
 * whose message is delayed; meanwhile the lost lease is closed. A release that let a lost lease's
 * expiry count for the waiter (its direct grant's lease start moved to that close) made the
 * waiter believe it had {@link #DELAY} more than Redis gave it.
 */
class RedisLostLeaseHandoffTests {

	private static final Duration LEASE = Duration.ofSeconds(20);

	/** No waiter in these tests may be rescued, or spoiled, by a poll. */
	private static final Duration SLOW_POLL = Duration.ofMinutes(1);

	private static final LockOptions ONCE = LockOptions.defaults().waitTime(Duration.ZERO);

	private static final LockOptions WAIT = LockOptions.defaults().waitTime(Duration.ofSeconds(30));

	/** How long the handoff's message to {@code here} is held back: its lock ages meanwhile. */
	private static final Duration DELAY = Duration.ofMillis(600);

	/**
	 * The lease is read before the {@code PTTL}, both in whole milliseconds. The bug's excess is
	 * {@link #DELAY} less the drift allowance (202 ms for {@link #LEASE}): about 400 ms.
	 */
	private static final long TOLERANCE_MILLIS = 50;

	private static final Duration PROMPT = Duration.ofSeconds(10);

	private static RedisServer redis;

	private final String name = "lost-lease-handoff-" + UUID.randomUUID();

	private final String lockKey = "{" + this.name + "}";

	private final String waitersKey = "{" + this.name + "}:waiters";

	private final List<AutoCloseable> closeables = new ArrayList<>();

	private final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private final List<Thread> threads = new ArrayList<>();

	private final AtomicInteger lossesReported = new AtomicInteger();

	private BlackholeProxy proxy;

	@BeforeAll
	static void startRedis() {
		redis = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		redis.close();
	}

	@AfterEach
	void close() throws Exception {
		if (this.proxy != null) {
			this.proxy.letThroughAnswers(true);
			this.proxy.letThroughAnswers(false);
		}
		for (Thread thread : this.threads) {
			thread.interrupt();
			thread.join(TimeUnit.SECONDS.toMillis(10));
		}
		for (AutoCloseable closeable : this.closeables) {
			closeable.close();
		}
		this.factories.forEach(LettuceConnectionFactory::destroy);
		if (this.proxy != null) {
			this.proxy.close();
		}
	}

	/**
	 * D1: the lost lease is closed after {@code elsewhere}'s release gave the lock to {@code here}'s
	 * waiter and before the waiter heard of it. The waiter's lease counts no more than Redis's
	 * {@code PTTL}; the loss is reported once, by {@code extend}, not again by the close.
	 */
	@Test
	void aLostLeaseReleasedWhileItsLocalWaiterHasNotHeardOfAHandoffGivesThatWaiterNoTimeRedisDoesNotGiveIt()
			throws Exception {
		DefaultLockTemplate here = template(true);
		DefaultLockTemplate elsewhere = template(false);
		Lease lost = here.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(here);
		awaitParked(lastThread());
		// The lock expires on Redis early (a failover, an eviction) and another process takes it.
		redis.command("DEL", this.lockKey);
		Lease other = elsewhere.acquire(this.name, null, ONCE);
		assertThat(lost.extend(LEASE)).as("extend of a lease whose lock another owner took").isFalse();
		assertThat(lost.isValid()).isFalse();
		assertThat(Duration.between(Instant.now(), lost.expiresAt())).as("the lost lease's own expiry, still ahead")
			.isGreaterThan(LEASE.dividedBy(2));
		// Here's waiter is recorded on Redis (refused by one of the two) and waits.
		awaitRecorded(1);
		awaitParked(lastThread());
		this.proxy.holdAnswers();
		other.close();
		// Elsewhere's release drew here's waiter (its record is gone); the message to here is held.
		await().atMost(PROMPT).pollInterval(Duration.ofMillis(5)).until(() -> recorded() == 0);
		Thread.sleep(DELAY.toMillis());
		// Here closes its lost lease before its waiter heard of the handoff.
		lost.close();
		Thread.sleep(100);
		Lease next = letThroughSubscriptionFirst(waiting);
		assertRedisGivesAtLeast(next);
		assertThat(next.fencingToken()).isGreaterThan(other.fencingToken());
		assertThat(this.lossesReported).as("losses reported for the lost lease").hasValue(1);
		next.close();
	}

	/**
	 * The same bound for a waiter of another instance: {@code here}'s waiter hears late of the
	 * handoff that {@code elsewhere}'s release made to it.
	 */
	@Test
	void aWaiterThatHearsLateOfAHandoffFromAnotherInstanceCountsNoTimeRedisDoesNotGiveIt() throws Exception {
		DefaultLockTemplate here = template(true);
		DefaultLockTemplate elsewhere = template(false);
		Lease held = elsewhere.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(here);
		awaitRecorded(1);
		awaitParked(lastThread());
		this.proxy.holdAnswers();
		held.close();
		await().atMost(PROMPT).pollInterval(Duration.ofMillis(5)).until(() -> recorded() == 0);
		Thread.sleep(DELAY.toMillis());
		Lease next = letThroughSubscriptionFirst(waiting);
		assertRedisGivesAtLeast(next);
		assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
		assertThat(this.lossesReported).hasValue(0);
		next.close();
	}

	/**
	 * Lets the held subscription bytes through, then, after a pause in which the waiter acts on
	 * them, the other connections' answers; returns the waiter's lease.
	 */
	private Lease letThroughSubscriptionFirst(CompletableFuture<Lease> waiting) throws Exception {
		this.proxy.letThroughAnswers(true);
		Thread.sleep(300);
		this.proxy.letThroughAnswers(false);
		Lease next = waiting.get(PROMPT.toSeconds(), TimeUnit.SECONDS);
		assertThat(next.isValid()).isTrue();
		return next;
	}

	/** The lease counts no more time than the lock's PTTL, read right after it. */
	private void assertRedisGivesAtLeast(Lease lease) {
		long believed = Duration.between(Instant.now(), lease.expiresAt()).toMillis();
		Object pttl = redis.command("PTTL", this.lockKey);
		assertThat(pttl).isInstanceOf(Long.class);
		assertThat(believed).as("the lease's remaining validity (ms) against the lock's PTTL on Redis (%s ms)", pttl)
			.isLessThanOrEqualTo((Long) pttl + TOLERANCE_MILLIS);
	}

	private long recorded() {
		return (Long) redis.command("ZCARD", this.waitersKey);
	}

	private void awaitRecorded(long count) {
		await().atMost(PROMPT).pollInterval(Duration.ofMillis(5)).until(() -> recorded() == count);
	}

	/** Waits until {@code thread} has waited for a wake-up for 100 ms (nothing in flight). */
	private static void awaitParked(Thread thread) {
		await().atMost(PROMPT)
			.during(Duration.ofMillis(100))
			.pollInterval(Duration.ofMillis(5))
			.until(() -> thread.getState() == Thread.State.TIMED_WAITING);
	}

	private Thread lastThread() {
		return this.threads.get(this.threads.size() - 1);
	}

	private CompletableFuture<Lease> waitInBackground(DefaultLockTemplate template) {
		CompletableFuture<Lease> acquired = new CompletableFuture<>();
		Thread thread = new Thread(() -> {
			try {
				acquired.complete(template.acquire(this.name, null, WAIT));
			}
			catch (Throwable ex) {
				acquired.completeExceptionally(ex);
			}
		}, "waiter");
		this.threads.add(thread);
		thread.start();
		return acquired;
	}

	/**
	 * A template over its own client, listening for releases; {@code throughProxy}: this one's
	 * connections go through {@link #proxy} ({@code here}).
	 */
	private DefaultLockTemplate template(boolean throughProxy) throws IOException {
		int port = redis.port();
		if (throughProxy) {
			this.proxy = new BlackholeProxy(redis.port());
			port = this.proxy.port();
		}
		LettuceConnectionFactory factory = RedisClients.connectionFactory(port);
		this.factories.add(factory);
		RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
		this.closeables.add(backend);
		LockListener listener = new LockListener() {

			@Override
			public void leaseLost(String name, String backend) {
				RedisLostLeaseHandoffTests.this.lossesReported.incrementAndGet();
			}

		};
		DefaultLockTemplate template = new DefaultLockTemplate(backend,
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(LEASE).withPollInterval(SLOW_POLL), listener);
		this.closeables.add(0, template);
		template.prepare();
		await().atMost(Duration.ofSeconds(60)).until(template::releaseEventsListening);
		if (throughProxy) {
			assertThat(this.proxy.subscriptions()).as("subscription connections through the proxy").isPositive();
		}
		return template;
	}

}
