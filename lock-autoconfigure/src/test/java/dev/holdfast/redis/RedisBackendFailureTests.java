package dev.holdfast.redis;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * A Redis that crashes, restarts or hangs: calls fail with {@link LockBackendException} within
 * a bounded time (the client's command timeout is two seconds here) and work again once Redis is
 * back, release notifications included.
 */
class RedisBackendFailureTests {

	private static final Duration TTL = Duration.ofSeconds(30);

	/** Command timeout plus generous slack for a loaded machine. */
	private static final Duration FAILURE_BOUND = Duration.ofSeconds(5);

	/** A call that does no network I/O, with slack for a loaded machine. */
	private static final Duration NO_WAIT = Duration.ofMillis(500);

	/** How long a waiter's record lasts: a release reserves the lock for a waiter recorded this long. */
	private static final Duration RECORD = Duration.ofSeconds(30);

	private RedisServer server;

	private LettuceConnectionFactory listeningFactory;

	private LettuceConnectionFactory releasingFactory;

	private RedisLockBackend listening;

	private RedisLockBackend releasing;

	@BeforeEach
	void start() {
		this.server = RedisServer.start();
		this.listeningFactory = RedisClients.connectionFactory(this.server);
		this.releasingFactory = RedisClients.connectionFactory(this.server);
		this.listening = new RedisLockBackend(this.listeningFactory);
		// The releasing backend also has the non-blocking calls.
		this.releasing = RedisLockBackend.of(this.releasingFactory, RedisLockBackend.DEFAULT_CHANNEL);
	}

	@AfterEach
	void stop() {
		this.listening.close();
		this.releasing.close();
		this.listeningFactory.destroy();
		this.releasingFactory.destroy();
		this.server.close();
	}

	@Test
	void callsFailWithinABoundedTimeWhileRedisIsDownAndSucceedAgainAfterRestart() throws Exception {
		String key = "test:" + UUID.randomUUID();
		assertThat(this.releasing.tryAcquire(key, "owner-1", TTL).acquired()).isTrue();
		this.server.kill();
		assertFailsQuickly(() -> this.releasing.tryAcquire(key, "owner-2", TTL), "acquire", key);
		assertFailsQuickly(() -> this.releasing.release(key, "owner-1"), "release", key);
		assertFailsQuickly(() -> this.releasing.renew(List.of(new HeldLock(key, "owner-1", TTL))), "renew", key);
		this.server.restart();
		AcquireResult afterRestart = eventually(() -> this.releasing.tryAcquire(key, "owner-3", TTL));
		assertThat(afterRestart.acquired()).isTrue();
		assertThat(this.releasing.renew(List.of(new HeldLock(key, "owner-3", TTL)))).containsExactly(key);
		assertThat(this.releasing.release(key, "owner-3")).isTrue();
	}

	@Test
	void callsToAHungRedisFailWithinABoundedTime() {
		String key = "test:" + UUID.randomUUID();
		this.releasing.tryAcquire(key, "owner-1", TTL);
		this.server.pause();
		try {
			assertFailsQuickly(() -> this.releasing.tryAcquire(key, "owner-2", TTL), "acquire", key);
			assertFailsQuickly(() -> this.releasing.release(key, "owner-1"), "release", key);
		}
		finally {
			this.server.resume();
		}
		// The timed-out release may still run once Redis resumes: either way owner-1 is gone now.
		eventually(() -> this.releasing.release(key, "owner-1"));
		assertThat(this.releasing.tryAcquire(key, "owner-3", TTL).acquired()).isTrue();
	}

	@Test
	void nonBlockingCallsFailWithinABoundedTimeWhileRedisIsDownOrHungAndSucceedAgainAfterwards() {
		AsyncLockBackend async = (AsyncLockBackend) this.releasing;
		String key = "test:" + UUID.randomUUID();
		assertThat(async.tryAcquireAsync(key, "owner-1", TTL).toCompletableFuture().join().acquired()).isTrue();
		this.server.kill();
		assertStageFailsQuickly(() -> async.tryAcquireAsync(key, "owner-2", TTL), "acquire", key);
		assertStageFailsQuickly(() -> async.releaseAsync(key, "owner-1"), "release", key);
		this.server.restart();
		AcquireResult afterRestart = eventually(
				() -> async.tryAcquireAsync(key, "owner-3", TTL).toCompletableFuture().join());
		assertThat(afterRestart.acquired()).isTrue();
		this.server.pause();
		try {
			assertStageFailsQuickly(() -> async.tryAcquireAsync(key, "owner-4", TTL), "acquire", key);
			assertStageFailsQuickly(() -> async.releaseAsync(key, "owner-3"), "release", key);
		}
		finally {
			this.server.resume();
		}
		eventually(() -> async.releaseAsync(key, "owner-3").toCompletableFuture().join());
		assertThat(async.tryAcquireAsync(key, "owner-5", TTL).toCompletableFuture().join().acquired()).isTrue();
	}

	@Test
	void releaseNotificationsFlowAgainAfterRedisRestarts() throws Exception {
		BlockingQueue<String> received = new LinkedBlockingQueue<>();
		this.listening.subscribe(received::add);
		await().atMost(Duration.ofSeconds(10)).until(this.listening::isListening);
		String before = "test:" + UUID.randomUUID();
		this.releasing.tryAcquire(before, "owner", TTL);
		this.listening.tryAcquireWaiting(before, "waiter", TTL, RECORD);
		// The release reserves the lock for the recorded waiter and publishes the reservation.
		this.releasing.release(before, "owner");
		assertThat(received.poll(5, TimeUnit.SECONDS)).isEqualTo(before);
		this.server.kill();
		this.server.restart();
		// Until the subscriber has reconnected, notifications are lost (pub/sub is best effort):
		// keep releasing until one arrives. Each round has its own owners: a reservation the
		// subscriber missed is claimed by nobody and only refuses the next round for its window.
		String after = "test:" + UUID.randomUUID();
		long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
		String delivered = null;
		for (int round = 0; delivered == null && System.nanoTime() < deadline; round++) {
			try {
				if (this.releasing.tryAcquire(after, "owner-" + round, TTL).acquired()) {
					this.listening.tryAcquireWaiting(after, "waiter-" + round, TTL, RECORD);
					this.releasing.release(after, "owner-" + round);
				}
			}
			catch (LockBackendException ex) {
				// The releasing client has not reconnected yet.
			}
			delivered = received.poll(200, TimeUnit.MILLISECONDS);
		}
		assertThat(delivered).isEqualTo(after);
		assertThat(this.listening.isListening()).isTrue();
	}

	@Test
	void subscribingWhileRedisIsDownReturnsAtOnceAndListensOnceRedisIsBack() throws Exception {
		this.server.kill();
		BlockingQueue<String> received = new LinkedBlockingQueue<>();
		long start = System.nanoTime();
		this.listening.subscribe(received::add);
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(NO_WAIT);
		assertThat(this.listening.isListening()).isFalse();
		this.server.restart();
		await().atMost(Duration.ofSeconds(20)).until(this.listening::isListening);
		assertReleaseReaches(received);
	}

	@Test
	void subscribingWhileRedisIsHungReturnsAtOnceAndListensOnceRedisAnswers() throws Exception {
		// A stopped server accepts connections and answers nothing, as a silent network does: the
		// subscription's handshake waits for the connection timeout, and no caller may wait for it.
		this.server.pause();
		BlockingQueue<String> received = new LinkedBlockingQueue<>();
		try {
			long start = System.nanoTime();
			this.listening.subscribe(received::add);
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(NO_WAIT);
			assertThat(this.listening.isListening()).isFalse();
		}
		finally {
			this.server.resume();
		}
		await().atMost(Duration.ofSeconds(30)).until(this.listening::isListening);
		assertReleaseReaches(received);
	}

	private void assertReleaseReaches(BlockingQueue<String> received) throws InterruptedException {
		String key = "test:" + UUID.randomUUID();
		eventually(() -> this.releasing.tryAcquire(key, "owner", TTL));
		// Only a release that reserves the lock for a recorded waiter is announced.
		assertThat(eventually(() -> this.releasing.tryAcquireWaiting(key, "waiter", TTL, RECORD)).acquired())
			.isFalse();
		this.releasing.release(key, "owner");
		assertThat(received.poll(5, TimeUnit.SECONDS)).isEqualTo(key);
		assertThat(received.poll(200, TimeUnit.MILLISECONDS)).as("one delivery per subscriber").isNull();
	}

	private static void assertFailsQuickly(Executable call, String operation, String key) {
		long start = System.nanoTime();
		assertThatExceptionOfType(LockBackendException.class).isThrownBy(call::execute)
			.withMessageContaining(operation)
			.withMessageContaining(key);
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(FAILURE_BOUND);
	}

	private static void assertStageFailsQuickly(Supplier<CompletionStage<?>> call, String operation, String key) {
		long start = System.nanoTime();
		CompletableFuture<?> stage = call.get().toCompletableFuture();
		assertThat(Duration.ofNanos(System.nanoTime() - start)).as("returns without waiting for Redis")
			.isLessThan(Duration.ofMillis(500));
		assertThatExceptionOfType(ExecutionException.class)
			.isThrownBy(() -> stage.get(FAILURE_BOUND.toMillis(), TimeUnit.MILLISECONDS))
			.havingCause()
			.isInstanceOf(LockBackendException.class)
			.withMessageContaining(operation)
			.withMessageContaining(key);
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(FAILURE_BOUND);
	}

	private static <T> T eventually(Supplier<T> call) {
		return await().atMost(Duration.ofSeconds(20))
			.ignoreExceptionsMatching((ex) -> ex instanceof LockBackendException || ex instanceof CompletionException)
			.until(call::get, (result) -> true);
	}

}
