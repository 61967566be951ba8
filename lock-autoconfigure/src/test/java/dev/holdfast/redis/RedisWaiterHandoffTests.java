package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockInterruptedException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockKeys;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * The reservation handoff on a real Redis: a waiting acquisition records itself with each refused
 * attempt; a release that finds live records reserves the lock for one drawn waiter for
 * {@value RedisLockBackend#RESERVATION_WINDOW_MILLIS} ms and publishes the reservation; that
 * waiter claims it with its own acquisition, which takes a new fencing token; a waiter that gives
 * up withdraws. First on the backend, then through two templates over two clients, as two
 * processes would have them.
 */
class RedisWaiterHandoffTests {

	/** Lease and poll interval where a test must not depend on a poll. */
	private static final Duration SLOW_POLL = Duration.ofMinutes(1);

	/** Well under the poll fallback, with slack for a loaded machine. */
	private static final Duration PROMPT = Duration.ofSeconds(5);

	private static final Duration LEASE = Duration.ofSeconds(30);

	/** How long the backend tests' waiters are recorded. */
	private static final Duration RECORD = Duration.ofSeconds(30);

	private static final Duration WINDOW = Duration.ofMillis(RedisLockBackend.RESERVATION_WINDOW_MILLIS);

	private static final LockOptions ONCE = LockOptions.defaults().waitTime(Duration.ZERO);

	private static final LockOptions WAIT = LockOptions.defaults().waitTime(SLOW_POLL);

	private static RedisServer server;

	private final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private final List<RedisLockBackend> backends = new ArrayList<>();

	/** Templates and subscriptions, closed before the backends. */
	private final List<AutoCloseable> closeables = new ArrayList<>();

	private final List<Thread> threads = new ArrayList<>();

	private final String name = "handoff-" + UUID.randomUUID();

	private final String lockKey = "{" + this.name + "}";

	private final String waitersKey = "{" + this.name + "}:waiters";

	private final String fenceKey = "{" + this.name + "}:fence";

	private @Nullable StringRedisTemplate raw;

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

	// The backend

	@Test
	void aReleaseWithARecordedWaiterReservesTheLockForItAndItsClaimTakesItWithALargerToken() throws Exception {
		RedisLockBackend releasing = backend();
		RedisLockBackend waiting = backend();
		BlockingQueue<String> reservations = reservationsHeardBy(waiting);
		AcquireResult held = releasing.tryAcquire(this.name, "holder", LEASE);
		assertThat(waiting.tryAcquireWaiting(this.name, "waiter", LEASE, RECORD).acquired()).isFalse();
		assertThat(releasing.release(this.name, "holder")).isTrue();
		assertThat(raw().opsForValue().get(this.lockKey)).as("reserved").isEqualTo("*waiter");
		assertThat(raw().getExpire(this.lockKey, TimeUnit.MILLISECONDS)).as("for the window, not a lease")
			.isBetween(1L, WINDOW.toMillis());
		assertThat(reservations.poll(PROMPT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(this.name + " waiter");
		// Nobody else takes a reserved lock: not a try-once attempt, not another waiter.
		AcquireResult once = releasing.tryAcquire(this.name, "once", LEASE);
		assertThat(once.acquired()).isFalse();
		assertThat(once.holderRemainingMillis()).isBetween(0L, WINDOW.toMillis());
		assertThat(join(((AsyncLockBackend) releasing).tryAcquireAsync(this.name, "async-once", LEASE)).acquired())
			.isFalse();
		assertThat(releasing.tryAcquireWaiting(this.name, "other", LEASE, RECORD).acquired()).isFalse();
		assertThat(releasing.release(this.name, "holder")).as("the former holder's release again").isFalse();
		assertThat(raw().opsForValue().get(this.lockKey)).isEqualTo("*waiter");
		// The reserved waiter's claim: its own acquisition, with its own lease and a new token.
		AcquireResult claim = waiting.tryAcquireWaiting(this.name, "waiter", LEASE, RECORD);
		assertThat(claim.acquired()).isTrue();
		assertThat(claim.fencingToken()).isGreaterThan(held.fencingToken())
			.isEqualTo(Long.parseLong(raw().opsForValue().get(this.fenceKey)));
		assertThat(raw().opsForValue().get(this.lockKey)).isEqualTo("waiter");
		assertThat(raw().getExpire(this.lockKey, TimeUnit.MILLISECONDS)).isGreaterThan(LEASE.toMillis() - 5_000);
		assertThat(raw().opsForZSet().range(this.waitersKey, 0, -1)).as("the claimer's record is gone")
			.containsExactly("other");
		assertThat(reservations.poll(200, TimeUnit.MILLISECONDS)).isNull();
	}

	/**
	 * Issue D3: a waiter drawn for a reservation that died, left, or whose withdrawal was lost
	 * costs the lock its window, never a lease (the holder's was 30 s).
	 */
	@Test
	void aReservationNobodyClaimsExpiresAfterItsWindowAndTheLockIsFreeAfterIt() {
		RedisLockBackend holder = backend();
		RedisLockBackend gone = backend();
		RedisLockBackend other = backend();
		AcquireResult held = holder.tryAcquire(this.name, "holder", LEASE);
		assertThat(held.acquired()).isTrue();
		// A waiter recorded, that never attempts again (its process died).
		assertThat(gone.tryAcquireWaiting(this.name, "gone", LEASE, RECORD).acquired()).isFalse();
		long released = System.nanoTime();
		assertThat(holder.release(this.name, "holder")).isTrue();
		AcquireResult refused = other.tryAcquire(this.name, "other-1", LEASE);
		assertThat(refused.acquired()).isFalse();
		assertThat(refused.holderRemainingMillis()).as("the refusal's remaining time").isBetween(0L, WINDOW.toMillis());
		Duration margin = Duration.ofSeconds(1);
		await().atMost(WINDOW.plus(margin))
			.pollInterval(Duration.ofMillis(10))
			.until(() -> !raw().hasKey(this.lockKey));
		AcquireResult taken = other.tryAcquire(this.name, "other-2", LEASE);
		assertThat(Duration.ofNanos(System.nanoTime() - released)).as("from the release to the next holder")
			.isLessThan(WINDOW.plus(margin));
		assertThat(taken.acquired()).as("free after the window").isTrue();
		assertThat(taken.fencingToken()).isGreaterThan(held.fencingToken());
	}

	@Test
	void aReleaseWithoutLiveRecordsDeletesTheLockAndPublishesNothing() throws Exception {
		// A channel of its own: nothing else is published on it.
		String channel = "test:channel:" + UUID.randomUUID();
		RedisLockBackend releasing = backend(channel);
		RedisLockBackend other = backend(channel);
		BlockingQueue<String> heard = reservationsHeardBy(other);
		// Nobody waited.
		assertThat(releasing.tryAcquire(this.name, "holder-1", LEASE).acquired()).isTrue();
		assertThat(releasing.release(this.name, "holder-1")).isTrue();
		assertThat(raw().hasKey(this.lockKey)).isFalse();
		// Refused try-once attempts, blocking or not: never recorded.
		assertThat(releasing.tryAcquire(this.name, "holder-2", LEASE).acquired()).isTrue();
		assertThat(other.tryAcquire(this.name, "once", LEASE).acquired()).isFalse();
		assertThat(join(((AsyncLockBackend) other).tryAcquireAsync(this.name, "async-once", LEASE)).acquired())
			.isFalse();
		assertThat(raw().hasKey(this.waitersKey)).isFalse();
		assertThat(releasing.release(this.name, "holder-2")).isTrue();
		assertThat(raw().hasKey(this.lockKey)).isFalse();
		// A record gone stale by Redis's clock.
		assertThat(releasing.tryAcquire(this.name, "holder-3", LEASE).acquired()).isTrue();
		assertThat(other.tryAcquireWaiting(this.name, "stale", LEASE, Duration.ofMillis(1)).acquired()).isFalse();
		Double staleAfter = raw().opsForZSet().score(this.waitersKey, "stale");
		if (staleAfter != null) {
			await().pollInterval(Duration.ofMillis(1)).until(() -> redisTimeMillis() > staleAfter);
		}
		assertThat(releasing.release(this.name, "holder-3")).isTrue();
		assertThat(raw().hasKey(this.lockKey)).isFalse();
		assertThat(raw().hasKey(this.waitersKey)).isFalse();
		// The subscriber listens: the first reservation is the first message it hears, so none of
		// the releases above published anything.
		assertThat(releasing.tryAcquire(this.name, "holder-4", LEASE).acquired()).isTrue();
		assertThat(other.tryAcquireWaiting(this.name, "waiter", LEASE, RECORD).acquired()).isFalse();
		assertThat(releasing.release(this.name, "holder-4")).isTrue();
		assertThat(heard.poll(PROMPT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(this.name + " waiter");
		assertThat(heard.poll(200, TimeUnit.MILLISECONDS)).isNull();
	}

	@Test
	void aReleaseWithoutRecordsPublishesAPermitSlotButNotALockKeyTheCheckSlotOrAShortenedKey() throws Exception {
		// SEM-8, RED-4's exception: only a permit slot's release is published with nobody recorded.
		String channel = "test:channel:" + UUID.randomUUID();
		RedisLockBackend releasing = backend(channel);
		BlockingQueue<String> heard = reservationsHeardBy(backend(channel));
		String shortened = new LockKeys("", 80).encodeSlot(this.name, "k".repeat(100), 2);
		assertThat(shortened).as("a shortened slot key").hasSizeLessThanOrEqualTo(80).doesNotEndWith("#2");
		for (String key : List.of(this.name, this.name + "#-1", shortened, this.name + "#2")) {
			assertThat(releasing.tryAcquire(key, "holder", LEASE).acquired()).isTrue();
			assertThat(releasing.release(key, "holder")).isTrue();
		}
		assertThat(heard.poll(PROMPT.toSeconds(), TimeUnit.SECONDS)).as("the first release heard")
			.isEqualTo(this.name + "#2");
		assertThat(heard.poll(200, TimeUnit.MILLISECONDS)).isNull();
	}

	/** {@code blocking}: {@code withdraw}; {@code non-blocking}: {@code withdrawAsync}. */
	@ParameterizedTest
	@ValueSource(strings = { "blocking", "non-blocking" })
	void aWithdrawnWaiterIsNotDrawn(String call) {
		RedisLockBackend holder = backend();
		RedisLockBackend waiting = backend();
		assertThat(holder.tryAcquire(this.name, "holder", LEASE).acquired()).isTrue();
		assertThat(waiting.tryAcquireWaiting(this.name, "first", LEASE, RECORD).acquired()).isFalse();
		assertThat(waiting.tryAcquireWaiting(this.name, "second", LEASE, RECORD).acquired()).isFalse();
		assertThat(withdraw(call, waiting, "first")).as("found its record").isTrue();
		assertThat(raw().opsForZSet().range(this.waitersKey, 0, -1)).containsExactly("second");
		assertThat(holder.release(this.name, "holder")).isTrue();
		assertThat(raw().opsForValue().get(this.lockKey)).as("reserved for the one left").isEqualTo("*second");
		assertThat(waiting.tryAcquireWaiting(this.name, "second", LEASE, RECORD).acquired()).isTrue();
		// The last recorded waiter withdraws: the next release frees the lock.
		assertThat(waiting.tryAcquireWaiting(this.name, "third", LEASE, RECORD).acquired()).isFalse();
		assertThat(withdraw(call, waiting, "third")).isTrue();
		assertThat(withdraw(call, waiting, "third")).as("withdrawn already").isFalse();
		assertThat(waiting.release(this.name, "second")).isTrue();
		assertThat(raw().hasKey(this.lockKey)).as("freed, not reserved").isFalse();
		assertThat(raw().hasKey(this.waitersKey)).isFalse();
	}

	/** {@code blocking}: {@code withdraw}; {@code non-blocking}: {@code withdrawAsync}. */
	@ParameterizedTest
	@ValueSource(strings = { "blocking", "non-blocking" })
	void aWithdrawalOfTheWaiterTheLockIsReservedForHandsItOnToTheNextRecordedWaiterOrFreesIt(String call)
			throws Exception {
		RedisLockBackend holder = backend();
		RedisLockBackend waiting = backend();
		BlockingQueue<String> reservations = reservationsHeardBy(holder);
		assertThat(holder.tryAcquire(this.name, "holder", LEASE).acquired()).isTrue();
		assertThat(waiting.tryAcquireWaiting(this.name, "a", LEASE, RECORD).acquired()).isFalse();
		assertThat(waiting.tryAcquireWaiting(this.name, "b", LEASE, RECORD).acquired()).isFalse();
		assertThat(holder.release(this.name, "holder")).isTrue();
		String value = raw().opsForValue().get(this.lockKey);
		assertThat(value).isIn("*a", "*b");
		String drawn = value.substring(1);
		String next = drawn.equals("a") ? "b" : "a";
		assertThat(reservations.poll(PROMPT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(this.name + " " + drawn);
		// The drawn waiter gave up before it claimed the lock.
		assertThat(withdraw(call, waiting, drawn)).as("found its reservation").isTrue();
		assertThat(raw().opsForValue().get(this.lockKey)).as("reserved for the next recorded waiter")
			.isEqualTo("*" + next);
		assertThat(raw().getExpire(this.lockKey, TimeUnit.MILLISECONDS)).isBetween(1L, WINDOW.toMillis());
		assertThat(reservations.poll(PROMPT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(this.name + " " + next);
		assertThat(waiting.tryAcquire(this.name, drawn, LEASE).acquired()).as("the withdrawn owner's attempt")
			.isFalse();
		// The last one gives up too: nobody is left to reserve it for, the lock is free at once.
		assertThat(withdraw(call, waiting, next)).isTrue();
		assertThat(raw().hasKey(this.lockKey)).as("freed").isFalse();
		assertThat(holder.tryAcquire(this.name, "once", LEASE).acquired()).isTrue();
		assertThat(reservations.poll(200, TimeUnit.MILLISECONDS)).isNull();
	}

	/**
	 * The releasing process's next waiter, named by the release, may have no record yet: it is
	 * recorded for the window before the draw. One that is recorded already, by its own attempt,
	 * keeps its longer record when the draw picks another waiter: cut to the window, it would be
	 * stale before the drawn waiter's release, which would free the lock unannounced while it
	 * sleeps to its next poll.
	 */
	@Test
	void aReleaseNamingItsNextWaiterRecordsItAndKeepsALongerRecordItHas() {
		RedisLockBackend releasing = backend();
		RedisLockBackend remote = backend();
		// Named before its first attempt: the only waiter, it is drawn.
		assertThat(releasing.tryAcquire(this.name, "holder", LEASE).acquired()).isTrue();
		assertThat(releasing.release(this.name, "holder", "unrecorded")).isTrue();
		assertThat(raw().opsForValue().get(this.lockKey)).isEqualTo("*unrecorded");
		assertThat(releasing.tryAcquireWaiting(this.name, "unrecorded", LEASE, RECORD).acquired()).isTrue();
		assertThat(releasing.release(this.name, "unrecorded")).isTrue();
		assertThat(raw().hasKey(this.lockKey)).isFalse();
		// Named beside a remote waiter: rounds until the remote one is drawn (each draw is even).
		for (int round = 0; round < 30; round++) {
			String key = this.name + ":" + round;
			String holder = "holder-" + round;
			String local = "local-" + round;
			assertThat(releasing.tryAcquire(key, holder, LEASE).acquired()).isTrue();
			assertThat(releasing.tryAcquireWaiting(key, local, LEASE, RECORD).acquired()).isFalse();
			assertThat(remote.tryAcquireWaiting(key, "remote-" + round, LEASE, RECORD).acquired()).isFalse();
			double recordedUntil = raw().opsForZSet().score("{" + key + "}:waiters", local);
			assertThat(releasing.release(key, holder, local)).isTrue();
			if (("*remote-" + round).equals(raw().opsForValue().get("{" + key + "}"))) {
				assertThat(raw().opsForZSet().score("{" + key + "}:waiters", local))
					.as("the named waiter's record, not drawn")
					.isGreaterThanOrEqualTo(recordedUntil);
				return;
			}
		}
		throw new AssertionError("the remote waiter was never drawn in 30 rounds");
	}

	// Two instances

	@Test
	void aWaiterOfAnotherInstanceIsWokenByItsReservationAndClaimsTheLockPromptly() throws Exception {
		DefaultLockTemplate releasing = listeningTemplate(backend());
		DefaultLockTemplate other = listeningTemplate(backend());
		Lease held = releasing.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(other, WAIT);
		awaitRecorded(1);
		long released = System.nanoTime();
		held.close();
		// Reserved for the waiter (or claimed by it already): not for the releasing instance.
		assertThat(releasing.tryAcquire(this.name, null, ONCE)).isEmpty();
		Lease next = waiting.get(PROMPT.toSeconds(), TimeUnit.SECONDS);
		assertThat(Duration.ofNanos(System.nanoTime() - released)).as("from the release to the lease, polling every %s",
				SLOW_POLL)
			.isLessThan(PROMPT);
		assertThat(next.isValid()).isTrue();
		assertThat(next.fencingToken()).isGreaterThan(held.fencingToken())
			.isEqualTo(Long.parseLong(raw().opsForValue().get(this.fenceKey)));
		assertThat(raw().hasKey(this.waitersKey)).as("the claimer's record is gone").isFalse();
		other.releaseAsync(next).toCompletableFuture().get(PROMPT.toSeconds(), TimeUnit.SECONDS);
		assertThat(raw().hasKey(this.lockKey)).isFalse();
	}

	@Test
	void aWaiterThatGivesUpWithdrawsSoThatTheNextReleaseFreesTheLockAtOnce() throws Exception {
		DefaultLockTemplate holder = listeningTemplate(backend());
		AtomicInteger withdrawals = new AtomicInteger();
		// Records that last a minute, whatever the wait: only the withdrawal removes them.
		ForwardingRedisBackend longRecords = new ForwardingRedisBackend(backend()) {

			@Override
			public AcquireResult tryAcquireWaiting(String key, String owner, Duration ttl, Duration recordFor) {
				return super.tryAcquireWaiting(key, owner, ttl, SLOW_POLL);
			}

			@Override
			public CompletionStage<AcquireResult> tryAcquireWaitingAsync(String key, String owner, Duration ttl,
					Duration recordFor) {
				return super.tryAcquireWaitingAsync(key, owner, ttl, SLOW_POLL);
			}

			@Override
			public boolean withdraw(String key, String owner) {
				withdrawals.incrementAndGet();
				return super.withdraw(key, owner);
			}

			@Override
			public CompletionStage<Boolean> withdrawAsync(String key, String owner) {
				withdrawals.incrementAndGet();
				return super.withdrawAsync(key, owner);
			}

		};
		DefaultLockTemplate waiter = listeningTemplate(longRecords);
		Lease held = holder.acquire(this.name, null, ONCE);
		Optional<Lease> none = waiter.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ofMillis(300)));
		assertThat(none).as("the wait time is over").isEmpty();
		await().atMost(PROMPT).until(() -> !raw().hasKey(this.waitersKey));
		assertThat(withdrawals).hasValue(1);
		holder.releaseAsync(held).toCompletableFuture().get(PROMPT.toSeconds(), TimeUnit.SECONDS);
		assertThat(raw().hasKey(this.lockKey)).as("freed at once, not reserved for the waiter that gave up").isFalse();
	}

	@Test
	void anInterruptedWaiterWithdrawsSoThatTheNextReleaseFreesTheLockAtOnce() throws Exception {
		DefaultLockTemplate holder = listeningTemplate(backend());
		DefaultLockTemplate other = listeningTemplate(backend());
		Lease held = holder.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(other, WAIT);
		// Recorded for two poll intervals (two minutes): only the withdrawal removes it in time.
		awaitRecorded(1);
		lastThread().interrupt();
		assertThatExceptionOfType(ExecutionException.class)
			.isThrownBy(() -> waiting.get(PROMPT.toSeconds(), TimeUnit.SECONDS))
			.withCauseInstanceOf(LockInterruptedException.class);
		await().atMost(PROMPT).until(() -> !raw().hasKey(this.waitersKey));
		holder.releaseAsync(held).toCompletableFuture().get(PROMPT.toSeconds(), TimeUnit.SECONDS);
		assertThat(raw().hasKey(this.lockKey)).as("freed at once, not reserved").isFalse();
		assertThat(holder.tryAcquire(this.name, null, ONCE)).isPresent().get().satisfies(Lease::close);
	}

	@Test
	void aNonBlockingWaiterIsReservedTheLockAndClaimsItAndACancelledOneWithdraws() throws Exception {
		DefaultLockTemplate releasing = listeningTemplate(backend());
		DefaultLockTemplate other = listeningTemplate(backend());
		Lease held = releasing.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = other.tryAcquireAsync(this.name, null, WAIT);
		awaitRecorded(1);
		long released = System.nanoTime();
		held.close();
		assertThat(releasing.tryAcquire(this.name, null, ONCE)).isEmpty();
		Lease next = waiting.get(PROMPT.toSeconds(), TimeUnit.SECONDS);
		assertThat(Duration.ofNanos(System.nanoTime() - released)).as("from the release to the lease")
			.isLessThan(PROMPT);
		assertThat(next.isValid()).isTrue();
		assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
		other.releaseAsync(next).toCompletableFuture().get(PROMPT.toSeconds(), TimeUnit.SECONDS);
		assertThat(raw().hasKey(this.lockKey)).isFalse();
		// A cancelled one withdraws its record (two minutes long).
		Lease again = releasing.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> cancelled = other.tryAcquireAsync(this.name, null, WAIT);
		awaitRecorded(1);
		cancelled.cancel(false);
		await().atMost(PROMPT).until(() -> !raw().hasKey(this.waitersKey));
		releasing.releaseAsync(again).toCompletableFuture().get(PROMPT.toSeconds(), TimeUnit.SECONDS);
		assertThat(raw().hasKey(this.lockKey)).as("freed at once, not reserved").isFalse();
	}

	/**
	 * Issue D4: a template shutting down ends its waiting acquisitions, blocking and not, and
	 * withdraws their records before {@code close()} returns, so that no release reserves a lock
	 * for a waiter of an instance that is gone. Redis answers the waiters' attempts in flight only
	 * 300 ms after the shutdown began, and each withdrawal 300 ms after it was sent (a slow
	 * network): {@code close()} waits for both.
	 */
	@Test
	void aTemplateShuttingDownEndsItsWaitingAcquisitionsAndWithdrawsTheirRecordsBeforeCloseReturns()
			throws Exception {
		DefaultLockTemplate holder = listeningTemplate(backend());
		CompletableFuture<Void> attemptsAnswered = new CompletableFuture<>();
		ForwardingRedisBackend slowNetwork = new ForwardingRedisBackend(backend()) {

			@Override
			public AcquireResult tryAcquireWaiting(String key, String owner, Duration ttl, Duration recordFor) {
				AcquireResult result = super.tryAcquireWaiting(key, owner, ttl, recordFor);
				attemptsAnswered.join();
				return result;
			}

			@Override
			public CompletionStage<AcquireResult> tryAcquireWaitingAsync(String key, String owner, Duration ttl,
					Duration recordFor) {
				return super.tryAcquireWaitingAsync(key, owner, ttl, recordFor)
					.thenCombine(attemptsAnswered, (result, answered) -> result);
			}

			@Override
			public CompletionStage<Boolean> withdrawAsync(String key, String owner) {
				Executor later = CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS);
				return CompletableFuture.supplyAsync(() -> null, later)
					.thenCompose((sent) -> super.withdrawAsync(key, owner));
			}

		};
		DefaultLockTemplate closing = listeningTemplate(slowNetwork);
		String otherName = this.name + "-non-blocking";
		String otherWaiters = "{" + otherName + "}:waiters";
		Lease held = holder.acquire(this.name, null, ONCE);
		Lease otherHeld = holder.acquire(otherName, null, ONCE);
		CompletableFuture<Lease> blocking = waitInBackground(closing, WAIT);
		// Queued behind the first in its instance's line: never recorded.
		CompletableFuture<Lease> queued = waitInBackground(closing, WAIT);
		CompletableFuture<Lease> nonBlocking = closing.tryAcquireAsync(otherName, null, WAIT);
		// Both heads' attempts ran on Redis; their answers are on their way.
		awaitRecorded(1);
		await().atMost(PROMPT).until(() -> raw().opsForZSet().zCard(otherWaiters) == 1);
		CompletableFuture.delayedExecutor(300, TimeUnit.MILLISECONDS).execute(() -> attemptsAnswered.complete(null));
		closing.stopAcquiring();
		closing.close();
		assertThat(Stream.of(this.waitersKey, otherWaiters).filter(raw()::hasKey))
			.as("records left when close() returned")
			.isEmpty();
		for (CompletableFuture<Lease> ended : List.of(blocking, queued, nonBlocking)) {
			assertThatExceptionOfType(ExecutionException.class)
				.isThrownBy(() -> ended.get(PROMPT.toSeconds(), TimeUnit.SECONDS))
				.havingCause()
				.isInstanceOf(LockBackendException.class)
				.withMessageContaining("shutting down");
		}
		holder.releaseAsync(held).toCompletableFuture().get(PROMPT.toSeconds(), TimeUnit.SECONDS);
		holder.releaseAsync(otherHeld).toCompletableFuture().get(PROMPT.toSeconds(), TimeUnit.SECONDS);
		assertThat(Stream.of(this.lockKey, "{" + otherName + "}").filter(raw()::hasKey))
			.as("locks reserved for a waiter that is gone, after their release")
			.isEmpty();
	}

	/**
	 * Issue D5: a withdrawal that fails is sent again in the background, and counted among the
	 * template's calls in flight (which a graceful shutdown waits for) until it is answered.
	 */
	@Test
	void aWithdrawalThatFailsIsSentAgainAndCountedUntilAnswered() throws Exception {
		DefaultLockTemplate holder = listeningTemplate(backend());
		AtomicInteger withdrawals = new AtomicInteger();
		CompletableFuture<Void> redisAnswersAgain = new CompletableFuture<>();
		ForwardingRedisBackend failingFirst = new ForwardingRedisBackend(backend()) {

			@Override
			public boolean withdraw(String key, String owner) {
				return withdrawAsync(key, owner).toCompletableFuture().join();
			}

			@Override
			public CompletionStage<Boolean> withdrawAsync(String key, String owner) {
				if (withdrawals.incrementAndGet() == 1) {
					return CompletableFuture.failedFuture(
							new LockBackendException("Redis withdraw of lock '" + key + "': connection lost", null));
				}
				// The retry waits until the test lets Redis answer.
				return redisAnswersAgain.thenCompose((ready) -> super.withdrawAsync(key, owner));
			}

		};
		DefaultLockTemplate waiter = listeningTemplate(failingFirst);
		Lease held = holder.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(waiter, WAIT);
		awaitRecorded(1);
		lastThread().interrupt();
		assertThatExceptionOfType(ExecutionException.class)
			.isThrownBy(() -> waiting.get(PROMPT.toSeconds(), TimeUnit.SECONDS))
			.withCauseInstanceOf(LockInterruptedException.class);
		await().atMost(PROMPT).until(() -> withdrawals.get() == 2);
		assertThat(waiter.releasesInFlight()).as("the withdrawal waiting for its answer").isOne();
		assertThat(raw().opsForZSet().zCard(this.waitersKey)).as("still recorded").isOne();
		redisAnswersAgain.complete(null);
		await().atMost(PROMPT).until(() -> !raw().hasKey(this.waitersKey));
		await().atMost(PROMPT).until(() -> waiter.releasesInFlight() == 0);
		assertThat(withdrawals).hasValue(2);
		holder.releaseAsync(held).toCompletableFuture().get(PROMPT.toSeconds(), TimeUnit.SECONDS);
		assertThat(raw().hasKey(this.lockKey)).as("freed at once, not reserved").isFalse();
	}

	/** Withdraws {@code owner} as a waiter of this test's lock, through the call named. */
	private boolean withdraw(String call, RedisLockBackend backend, String owner) {
		return call.equals("blocking") ? backend.withdraw(this.name, owner)
				: join(backend.withdrawAsync(this.name, owner));
	}

	/** Reservations (and releases) published on the backend's channel, as {@code "<key> <owner>"}. */
	private BlockingQueue<String> reservationsHeardBy(RedisLockBackend backend) {
		BlockingQueue<String> heard = new LinkedBlockingQueue<>();
		this.closeables.add(backend.subscribe((key) -> heard.add(key), (key, owner) -> heard.add(key + " " + owner)));
		await().atMost(Duration.ofSeconds(60)).until(backend::isListening);
		return heard;
	}

	private void awaitRecorded(long count) {
		await().atMost(PROMPT)
			.pollInterval(Duration.ofMillis(5))
			.until(() -> raw().opsForZSet().zCard(this.waitersKey) == count);
	}

	private long redisTimeMillis() {
		return raw().execute((RedisCallback<Long>) (connection) -> connection.serverCommands()
			.time(TimeUnit.MILLISECONDS));
	}

	private Thread lastThread() {
		return this.threads.get(this.threads.size() - 1);
	}

	/** Acquires the lock on another thread. */
	private CompletableFuture<Lease> waitInBackground(DefaultLockTemplate instance, LockOptions options) {
		CompletableFuture<Lease> acquired = new CompletableFuture<>();
		Thread thread = new Thread(() -> {
			try {
				acquired.complete(instance.acquire(this.name, null, options));
			}
			catch (Throwable ex) {
				acquired.completeExceptionally(ex);
			}
		});
		this.threads.add(thread);
		thread.start();
		return acquired;
	}

	private static <T> T join(CompletionStage<T> stage) {
		return stage.toCompletableFuture().orTimeout(5, TimeUnit.SECONDS).join();
	}

	private RedisLockBackend backend() {
		return backend(RedisLockBackend.DEFAULT_CHANNEL);
	}

	private RedisLockBackend backend(String channel) {
		LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
		this.factories.add(factory);
		RedisLockBackend backend = RedisLockBackend.of(factory, channel);
		assertThat(backend).isInstanceOf(AsyncLockBackend.class);
		this.backends.add(backend);
		return backend;
	}

	/** A template over {@code backend}, as one process would have it, listening for reservations. */
	private DefaultLockTemplate listeningTemplate(LockBackend backend) {
		DefaultLockTemplate template = new DefaultLockTemplate(backend,
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(SLOW_POLL).withPollInterval(SLOW_POLL));
		this.closeables.add(0, template);
		template.prepare();
		await().atMost(Duration.ofSeconds(60)).until(template::releaseEventsListening);
		return template;
	}

	private StringRedisTemplate raw() {
		StringRedisTemplate template = this.raw;
		if (template == null) {
			LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
			this.factories.add(factory);
			template = RedisClients.template(factory);
			this.raw = template;
		}
		return template;
	}

}
