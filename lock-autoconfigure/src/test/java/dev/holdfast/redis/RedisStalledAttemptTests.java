package dev.holdfast.redis;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A non-blocking waiting acquisition whose attempt is in flight when a release's grant returns
 * the lock: the attempt's later failure leaves the caller's lock alone.
 */
class RedisStalledAttemptTests {

	private static RedisServer server;

	private final List<AutoCloseable> closeables = new CopyOnWriteArrayList<>();

	private final String name = "review-" + UUID.randomUUID();

	@BeforeAll
	static void start() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stop() {
		server.close();
	}

	@AfterEach
	void close() throws Exception {
		for (AutoCloseable c : this.closeables) {
			c.close();
		}
	}

	@Test
	void anAttemptInFlightWhenTheGrantReturnedTheLeaseFailsWithoutReleasingTheLock() throws Exception {
		Duration slow = Duration.ofMinutes(1);
		LettuceConnectionFactory fa = RedisClients.connectionFactory(server);
		LettuceConnectionFactory fb = RedisClients.connectionFactory(server);
		this.closeables.add(fa::destroy);
		this.closeables.add(fb::destroy);
		DefaultLockTemplate a = new DefaultLockTemplate(RedisLockBackend.of(fa, RedisLockBackend.DEFAULT_CHANNEL),
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(slow).withPollInterval(slow));
		StallingBackend stalling = new StallingBackend(RedisLockBackend.of(fb, RedisLockBackend.DEFAULT_CHANNEL));
		DefaultLockTemplate b = new DefaultLockTemplate(stalling,
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(slow).withPollInterval(Duration.ofMillis(200)));
		this.closeables.add(0, a);
		this.closeables.add(0, b);
		a.prepare();
		b.prepare();
		await().atMost(Duration.ofSeconds(60)).until(() -> a.releaseEventsListening() && b.releaseEventsListening());
		Lease held = a.acquire(this.name, null, LockOptions.defaults().waitTime(Duration.ZERO));
		CompletableFuture<Lease> waiting = b.tryAcquireAsync(this.name, null, LockOptions.defaults().waitTime(slow));
		// Its second attempt is in flight (stalled) ...
		await().atMost(Duration.ofSeconds(20)).until(() -> stalling.recordedAsyncAttempts.get() >= 2);
		// ... when the release hands it the lock: the grant returns the lease.
		held.close();
		Lease lease = waiting.get(20, TimeUnit.SECONDS);
		org.springframework.data.redis.core.StringRedisTemplate raw = RedisClients.template(fa);
		String owner = raw.opsForValue().get("{" + this.name + "}");
		assertThat(owner).isNotNull();
		// Now the stalled attempt times out: its failure must not release the lock the grant returned.
		stalling.stalled.completeExceptionally(new LockBackendException("command timed out", null));
		await().during(Duration.ofSeconds(1))
			.atMost(Duration.ofSeconds(5))
			.until(() -> owner.equals(raw.opsForValue().get("{" + this.name + "}")));
		assertThat(lease.isValid()).as("the caller holds the lease").isTrue();
		lease.close();
	}

	/**
	 * The thread that sends the waiter's next attempt is held up (preempted, on a loaded machine)
	 * after it looked at the acquisition, which was still waiting, and before the attempt is
	 * written: meanwhile a release hands the lock to the waiter, the grant returns the lease, and
	 * the caller uses it and releases it. An attempt sent after that release finds the lock free
	 * and takes it again for an acquisition that has ended: nobody releases it, and the lock stays
	 * blocked for its lease time (a minute here).
	 */
	@Test
	void anAttemptSentAfterTheGrantedLeaseWasReleasedLeavesTheLockFree() throws Exception {
		Fixture fixture = new Fixture();
		Lease lease = fixture.grantWhileTheNextAttemptIsHeldUp();
		long token = lease.fencingToken();
		fixture.b.releaseAsync(lease).toCompletableFuture().get(10, TimeUnit.SECONDS);
		fixture.delaying.proceed.countDown();
		await().atMost(Duration.ofSeconds(10)).until(() -> fixture.delaying.sent.get() >= 2);
		// The lock is free at once (the held-up attempt either went out before the release, or its
		// lock was given back): not held for a minute by an acquisition that has ended.
		await().atMost(Duration.ofSeconds(5)).until(() -> fixture.raw.opsForValue().get(fixture.lockKey) == null);
		Lease next = fixture.a.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5)))
			.orElseThrow(() -> new AssertionError("the lock stayed held by " + fixture.raw.opsForValue().get(fixture.lockKey)));
		assertThat(next.fencingToken()).isGreaterThan(token);
		next.close();
	}

	/**
	 * As above, but another instance holds the lock when the held-up attempt runs: refused, it
	 * records the waiter again, and the next release hands the lock to that record, whose grant
	 * its process ignores (the acquisition has ended with the lock): the lock stays blocked for
	 * its lease time.
	 */
	@Test
	void anAttemptSentAfterTheGrantedLeaseWasReleasedLeavesNoRecordBehind() throws Exception {
		Fixture fixture = new Fixture();
		Lease lease = fixture.grantWhileTheNextAttemptIsHeldUp();
		fixture.b.releaseAsync(lease).toCompletableFuture().get(10, TimeUnit.SECONDS);
		Lease other = fixture.a.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5)))
			.orElseThrow();
		fixture.delaying.proceed.countDown();
		await().atMost(Duration.ofSeconds(10)).until(() -> fixture.delaying.sent.get() >= 2);
		// Its answer is in once a later command on that connection is answered.
		fixture.b.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ZERO)).ifPresent(Lease::close);
		other.close();
		await().atMost(Duration.ofSeconds(5)).until(() -> fixture.raw.opsForValue().get(fixture.lockKey) == null);
		assertThat(fixture.a.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5))))
			.as("free after the release, held by %s", fixture.raw.opsForValue().get(fixture.lockKey))
			.isPresent()
			.get()
			.satisfies(Lease::close);
	}

	/**
	 * The waiter's second attempt is written only after the lease its grant returned was released
	 * (as an attempt resent after {@code NOSCRIPT} or a reconnection is, which the sending count
	 * does not order): it finds the lock free and takes it again for an acquisition that has
	 * ended. Its answer releases that owner's lock again, so the lock is not blocked for its lease
	 * time (a minute here).
	 */
	@Test
	void anAttemptWrittenAfterTheGrantedLeaseWasReleasedDoesNotKeepTheLock() throws Exception {
		Fixture fixture = new Fixture(true);
		Lease lease = fixture.grantWhileTheNextAttemptIsHeldUp();
		long token = lease.fencingToken();
		fixture.b.releaseAsync(lease).toCompletableFuture().get(10, TimeUnit.SECONDS);
		assertThat(fixture.raw.opsForValue().get(fixture.lockKey)).as("released").isNull();
		AcquireResult late = fixture.delaying.sendDeferred().get(10, TimeUnit.SECONDS);
		assertThat(late.acquired()).as("the late attempt took the free lock").isTrue();
		await().atMost(Duration.ofSeconds(5)).until(() -> fixture.raw.opsForValue().get(fixture.lockKey) == null);
		Lease next = fixture.a.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5)))
			.orElseThrow(() -> new AssertionError("the lock stayed held by " + fixture.raw.opsForValue().get(fixture.lockKey)));
		assertThat(next.fencingToken()).isGreaterThan(token);
		next.close();
	}

	/**
	 * As above, but another instance holds the lock when the late attempt runs: refused, it records
	 * the waiter again, and its answer withdraws that record, so the holder's release does not hand
	 * the lock to an acquisition that has ended.
	 */
	@Test
	void anAttemptWrittenAfterTheGrantedLeaseWasReleasedLeavesNoRecordBehind() throws Exception {
		Fixture fixture = new Fixture(true);
		Lease lease = fixture.grantWhileTheNextAttemptIsHeldUp();
		fixture.b.releaseAsync(lease).toCompletableFuture().get(10, TimeUnit.SECONDS);
		Lease other = fixture.a.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5)))
			.orElseThrow();
		AcquireResult late = fixture.delaying.sendDeferred().get(10, TimeUnit.SECONDS);
		assertThat(late.acquired()).as("the late attempt was refused").isFalse();
		// The record lives two poll intervals (4 s) unless withdrawn: a release meanwhile would hand
		// the lock to it, and nobody would use or release it for its lease time.
		String waiters = fixture.lockKey + ":waiters";
		await().atMost(Duration.ofMillis(2500)).until(() -> fixture.raw.opsForZSet().size(waiters) == 0);
		other.close();
		await().atMost(Duration.ofSeconds(5)).until(() -> fixture.raw.opsForValue().get(fixture.lockKey) == null);
		assertThat(fixture.a.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5))))
			.as("free after the release, held by %s", fixture.raw.opsForValue().get(fixture.lockKey))
			.isPresent()
			.get()
			.satisfies(Lease::close);
	}

	/** Template a holds the lock; template b's non-blocking waiter has its second attempt held up. */
	private final class Fixture {

		final Duration slow = Duration.ofMinutes(1);

		final String lockKey = "{" + RedisStalledAttemptTests.this.name + "}";

		final DefaultLockTemplate a;

		final DefaultLockTemplate b;

		final DelayingBackend delaying;

		final org.springframework.data.redis.core.StringRedisTemplate raw;

		Fixture() {
			this(false);
		}

		/** @param deferred whether b's second attempt is sent only by {@link DelayingBackend#sendDeferred} */
		Fixture(boolean deferred) {
			LettuceConnectionFactory fa = RedisClients.connectionFactory(server);
			LettuceConnectionFactory fb = RedisClients.connectionFactory(server);
			RedisStalledAttemptTests.this.closeables.add(fa::destroy);
			RedisStalledAttemptTests.this.closeables.add(fb::destroy);
			this.a = new DefaultLockTemplate(RedisLockBackend.of(fa, RedisLockBackend.DEFAULT_CHANNEL),
					LockSettings.defaults().withKeyPrefix("").withLeaseTime(this.slow).withPollInterval(this.slow));
			this.delaying = new DelayingBackend(RedisLockBackend.of(fb, RedisLockBackend.DEFAULT_CHANNEL), deferred);
			// Records last two poll intervals: the first attempt's record is still there for the release.
			this.b = new DefaultLockTemplate(this.delaying, LockSettings.defaults()
				.withKeyPrefix("")
				.withLeaseTime(this.slow)
				.withPollInterval(Duration.ofSeconds(2)));
			RedisStalledAttemptTests.this.closeables.add(0, this.a);
			RedisStalledAttemptTests.this.closeables.add(0, this.b);
			this.a.prepare();
			this.b.prepare();
			await().atMost(Duration.ofSeconds(60))
				.until(() -> this.a.releaseEventsListening() && this.b.releaseEventsListening());
			this.raw = RedisClients.template(fa);
		}

		/**
		 * a holds the lock, b waits without blocking; once b's second attempt is held up before it
		 * is sent, a releases: the lease that b's acquisition returns (by the grant, or by that
		 * attempt once it goes out: it is held up for two seconds at most).
		 */
		Lease grantWhileTheNextAttemptIsHeldUp() throws Exception {
			Lease held = this.a.acquire(RedisStalledAttemptTests.this.name, null,
					LockOptions.defaults().waitTime(Duration.ZERO));
			CompletableFuture<Lease> waiting = this.b.tryAcquireAsync(RedisStalledAttemptTests.this.name, null,
					LockOptions.defaults().waitTime(this.slow));
			assertThat(this.delaying.heldUp.await(20, TimeUnit.SECONDS)).as("second attempt held up").isTrue();
			held.close();
			Lease lease = waiting.get(20, TimeUnit.SECONDS);
			assertThat(lease.fencingToken()).isGreaterThan(held.fencingToken());
			return lease;
		}

	}

	/** Holds the second waiting attempt up before it is sent, until released or for two seconds. */
	static final class DelayingBackend extends ForwardingRedisBackend {

		final java.util.concurrent.CountDownLatch heldUp = new java.util.concurrent.CountDownLatch(1);

		final java.util.concurrent.CountDownLatch proceed = new java.util.concurrent.CountDownLatch(1);

		final AtomicInteger attempts = new AtomicInteger();

		final AtomicInteger sent = new AtomicInteger();

		/** Whether the second attempt returns at once and is written only by {@link #sendDeferred}. */
		private final boolean deferred;

		private final CompletableFuture<AcquireResult> deferredAnswer = new CompletableFuture<>();

		private volatile @Nullable Runnable deferredSend;

		DelayingBackend(RedisLockBackend delegate, boolean deferred) {
			super(delegate);
			this.deferred = deferred;
		}

		/** Writes the deferred second attempt now; its answer, as the acquisition sees it. */
		CompletableFuture<AcquireResult> sendDeferred() {
			Runnable send = this.deferredSend;
			assertThat(send).as("a deferred attempt").isNotNull();
			send.run();
			return this.deferredAnswer;
		}

		@Override
		public CompletionStage<AcquireResult> tryAcquireWaitingAsync(String key, String owner, Duration ttl,
				Duration recordFor) {
			if (this.deferred && this.attempts.incrementAndGet() == 2) {
				this.deferredSend = () -> super.tryAcquireWaitingAsync(key, owner, ttl, recordFor)
					.whenComplete((answer, ex) -> {
						if (ex != null) {
							this.deferredAnswer.completeExceptionally(ex);
						}
						else {
							this.deferredAnswer.complete(answer);
						}
					});
				this.heldUp.countDown();
				this.sent.incrementAndGet();
				return this.deferredAnswer.thenApply((answer) -> answer);
			}
			if (!this.deferred && this.attempts.incrementAndGet() == 2) {
				this.heldUp.countDown();
				try {
					this.proceed.await(2, TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}
			try {
				return super.tryAcquireWaitingAsync(key, owner, ttl, recordFor);
			}
			finally {
				this.sent.incrementAndGet();
			}
		}

	}

	static final class StallingBackend extends ForwardingRedisBackend {

		final AtomicInteger asyncAcquisitions = new AtomicInteger();

		final AtomicInteger asyncReleases = new AtomicInteger();

		final AtomicInteger recordedAsyncAttempts = new AtomicInteger();

		final CompletableFuture<AcquireResult> stalled = new CompletableFuture<>();

		StallingBackend(RedisLockBackend delegate) {
			super(delegate);
		}

		@Override
		public CompletionStage<AcquireResult> tryAcquireAsync(String key, String owner, Duration ttl) {
			this.asyncAcquisitions.incrementAndGet();
			return super.tryAcquireAsync(key, owner, ttl);
		}

		@Override
		public CompletionStage<Boolean> releaseAsync(String key, String owner) {
			this.asyncReleases.incrementAndGet();
			return super.releaseAsync(key, owner);
		}

		@Override
		public CompletionStage<AcquireResult> tryAcquireWaitingAsync(String key, String owner, Duration ttl,
				Duration recordFor) {
			this.asyncAcquisitions.incrementAndGet();
			if (this.recordedAsyncAttempts.incrementAndGet() == 2) {
				return this.stalled;
			}
			return super.tryAcquireWaitingAsync(key, owner, ttl, recordFor);
		}

		@Override
		public void releaseAsync(String key, String owner, @Nullable String localWaiter,
				@Nullable Duration localWaiterTtl, Duration recordFor,
				BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
			this.asyncReleases.incrementAndGet();
			super.releaseAsync(key, owner, localWaiter, localWaiterTtl, recordFor, whenAnswered);
		}

	}


}
