package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

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
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The handoff on Redis between instances (two templates over two clients, as two processes
 * would have): waiting acquisitions record themselves, the release makes a recorded waiter the
 * holder and announces it with the fencing token, and that waiter holds the lock without another
 * call.
 */
class RedisWaiterHandoffTests {

	/** Lease and poll interval where a test must not depend on a poll. */
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

	private final String name = "handoff-" + UUID.randomUUID();

	private final String lockKey = "{" + this.name + "}";

	private final String waitersKey = "{" + this.name + "}:waiters";

	private final String fenceKey = "{" + this.name + "}:fence";

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
	void aRecordedWaiterOfAnotherInstanceGetsTheLockAheadOfTheReleasingInstancesNextAttempt() throws Exception {
		DefaultLockTemplate releasing = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		DefaultLockTemplate other = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		Lease held = releasing.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(other, WAIT);
		await().atMost(WAKE_BOUND).until(() -> raw().opsForZSet().zCard(this.waitersKey) == 1);
		held.close();
		// On the releasing instance's connection, right behind its release: before, it took the
		// lock every time, ahead of the other instance's waiter that only heard the announcement.
		Optional<Lease> once = releasing.tryAcquire(this.name, null, ONCE);
		assertThat(once).as("the lock went to the recorded waiter, not to the releasing instance").isEmpty();
		Lease next = waiting.get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS);
		assertThat(next.isValid()).isTrue();
		assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
		assertThat(raw().hasKey(this.waitersKey)).as("the granted waiter's record is gone").isFalse();
		next.close();
	}

	@Test
	void aLocalWaiterSendsNothingWhileItsOwnInstanceHoldsTheKeyAndIsGrantedTheLockByItsRelease() throws Exception {
		DefaultLockTemplate instance = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		Lease held = instance.acquire(this.name, null, ONCE);
		long scriptsBefore = scriptCalls();
		CompletableFuture<Lease> waiting = waitInBackground(instance, WAIT);
		awaitParkedInRace(lastThread());
		// Its attempt would only be refused: the release names it (the releasing process's next
		// waiter) and makes it the holder.
		await().during(Duration.ofMillis(300))
			.atMost(WAKE_BOUND)
			.until(() -> scriptCalls() - scriptsBefore == 0);
		assertThat(scriptCalls() - scriptsBefore).as("scripts while its own instance holds the key").isZero();
		assertThat(raw().hasKey(this.waitersKey)).as("not recorded by an attempt").isFalse();
		assertThat(waiting).isNotDone();
		held.close();
		// The grant (from the release's answer) wakes it, long before its poll.
		Lease next = waiting.get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS);
		assertThat(scriptCalls() - scriptsBefore).as("the release is the only script").isEqualTo(1);
		assertThat(next.isValid()).isTrue();
		assertThat(next.fencingToken()).isEqualTo(Long.parseLong(raw().opsForValue().get(this.fenceKey)))
			.isGreaterThan(held.fencingToken());
		next.close();
		await().atMost(WAKE_BOUND).until(() -> !raw().hasKey(this.lockKey));
	}

	@Test
	void aLocalWaiterAttemptsWhileItsOwnInstanceHoldsTheKeyIfTheBackendHandsNoUnmarkedLockToIt() throws Exception {
		// A backend of the earlier contract: its release records the named waiter only beside others.
		ForwardingRedisBackend earlierContract = new ForwardingRedisBackend(backend(RedisLockBackend.DEFAULT_CHANNEL)) {

			@Override
			public boolean handsUnmarkedLockToLocalWaiter() {
				return false;
			}

		};
		DefaultLockTemplate instance = listeningTemplate(earlierContract, SLOW_POLL, SLOW_POLL);
		Lease held = instance.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(instance, WAIT);
		// Its refused attempt records it: the mark the release of such a backend looks for.
		await().atMost(WAKE_BOUND).until(() -> raw().opsForZSet().zCard(this.waitersKey) == 1);
		held.close();
		Lease next = waiting.get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS);
		assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
		next.close();
	}

	@Test
	void aLocalWaiterIsWokenWhenTheReleaseOfItsInstanceFindsTheKeyGone() throws Exception {
		DefaultLockTemplate instance = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		Lease held = instance.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(instance, WAIT);
		awaitParkedInRace(lastThread());
		// Lost on Redis (a failover, an eviction) while the lease is still valid here: the release
		// answers 0 and hands nothing on. Not woken, the waiter slept to its poll (a minute).
		raw().delete(this.lockKey);
		held.close();
		Lease next = waiting.get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS);
		assertThat(next.isValid()).isTrue();
		next.close();
	}

	@Test
	void aLocalWaiterIsWokenWhenTheLeaseOfItsInstanceIsLost() throws Exception {
		Duration lease = Duration.ofSeconds(15);
		DefaultLockTemplate instance = listeningTemplate(backend(RedisLockBackend.DEFAULT_CHANNEL), SLOW_POLL, lease);
		Lease held = instance.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(instance, WAIT);
		awaitParkedInRace(lastThread());
		raw().delete(this.lockKey);
		// The renewal (a third of the lease time after the acquisition) finds the lock gone and marks
		// the lease lost, which wakes the waiter (~5 s after the acquisition). Not woken, it slept to
		// the lease's end (15 s): waited for up to 2 s less than that, room for a loaded machine.
		Lease next = waiting.get(lease.toSeconds() - 2, TimeUnit.SECONDS);
		assertThat(held.isValid()).isFalse();
		assertThat(next.isValid()).isTrue();
		next.close();
		held.close();
	}

	@Test
	void aLocalWaiterIsWokenWhenTheAnswerOfTheReleaseThatHandedItTheLockIsLost() throws Exception {
		LosingReleaseAnswers backend = losingReleaseAnswers();
		DefaultLockTemplate instance = listeningTemplate(backend, SLOW_POLL, SLOW_POLL);
		Lease held = instance.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(instance, WAIT);
		awaitParkedInRace(lastThread());
		backend.loseNextReleaseAnswer(() -> {
		});
		held.close();
		assertThat(backend.lostAnswer).as("Redis handed the lock to the named waiter").isNegative();
		// Not woken, it slept to its poll (a minute); woken, its attempt finds it holds the lock.
		Lease next = waiting.get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS);
		assertThat(next.fencingToken()).isEqualTo(-backend.lostAnswer);
		next.close();
		await().atMost(WAKE_BOUND).until(() -> !raw().hasKey(this.lockKey));
	}

	@Test
	void aLockHandedToALocalWaiterThatLeftIsHandedOnWhenTheReleasesAnswerIsLost() throws Exception {
		LosingReleaseAnswers backend = losingReleaseAnswers();
		DefaultLockTemplate instance = listeningTemplate(backend, SLOW_POLL, SLOW_POLL);
		Lease held = instance.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(instance, WAIT);
		Thread waiter = lastThread();
		awaitParkedInRace(waiter);
		// Loaded, so that the waiter's withdrawal is one EVALSHA that runs (no NOSCRIPT retry).
		raw().execute((org.springframework.data.redis.core.RedisCallback<String>) (connection) -> connection
			.scriptingCommands()
			.scriptLoad(RedisScripts.WITHDRAW.getScriptAsString().getBytes(java.nio.charset.StandardCharsets.UTF_8)));
		backend.loseNextReleaseAnswer(() -> {
			// The release named the waiter; before it is sent, the waiter leaves, and its withdrawal
			// reaches Redis first (it finds nothing to withdraw).
			long before = scriptCalls();
			waiter.interrupt();
			await().atMost(WAKE_BOUND).until(waiting::isDone);
			await().atMost(WAKE_BOUND).until(() -> scriptCalls() > before);
		});
		held.close();
		assertThat(waiting).isCompletedExceptionally();
		assertThat(backend.lostAnswer).as("Redis handed the lock to the waiter that left").isNegative();
		// The answer, the grant's only copy, was lost. Held by the gone waiter, the lock stayed
		// blocked for its lease time (a minute): the failed release withdraws it again instead.
		await().atMost(WAKE_BOUND).until(() -> !raw().hasKey(this.lockKey));
		assertThat(instance.tryAcquire(this.name, null, ONCE)).isPresent().get().satisfies(Lease::close);
	}

	/** Waits until {@code thread} waits in its racer (not yet, or no longer, sending anything). */
	private static void awaitParkedInRace(Thread thread) {
		await().atMost(WAKE_BOUND)
			.until(() -> thread.getState() == Thread.State.TIMED_WAITING && java.util.Arrays
				.stream(thread.getStackTrace())
				.anyMatch((frame) -> frame.getClassName().equals("dev.holdfast.core.Racer")
						&& frame.getMethodName().equals("race")));
	}

	private Thread lastThread() {
		return this.threads.get(this.threads.size() - 1);
	}

	private LosingReleaseAnswers losingReleaseAnswers() {
		LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
		this.factories.add(factory);
		LosingReleaseAnswers backend = new LosingReleaseAnswers(factory);
		this.backends.add(backend);
		return backend;
	}

	/**
	 * A blocking backend whose next {@code RELEASE} runs on Redis and then fails as a command
	 * timeout after Redis ran it would: its answer is lost.
	 */
	private static final class LosingReleaseAnswers extends RedisLockBackend {

		private volatile Runnable beforeLostRelease;

		volatile long lostAnswer;

		LosingReleaseAnswers(LettuceConnectionFactory factory) {
			super(factory, RedisLockBackend.DEFAULT_CHANNEL);
		}

		/** The next release runs {@code before} first (after it named its waiter), then loses its answer. */
		void loseNextReleaseAnswer(Runnable before) {
			this.beforeLostRelease = before;
		}

		@Override
		<T> T eval(org.springframework.data.redis.core.script.RedisScript<?> script,
				org.springframework.data.redis.connection.ReturnType type, byte[][] keys, byte[][] args) {
			Runnable before = this.beforeLostRelease;
			if (script != RedisScripts.RELEASE || before == null) {
				return super.eval(script, type, keys, args);
			}
			this.beforeLostRelease = null;
			before.run();
			Object answer = super.eval(script, type, keys, args);
			this.lostAnswer = ((Number) answer).longValue();
			throw new org.springframework.dao.QueryTimeoutException("Redis command timed out (the answer is lost)");
		}

	}

	@Test
	void aQueuedThreadThatTimesOutBeforeTheReleaseLeavesNoReservation() throws Exception {
		DefaultLockTemplate instance = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		DefaultLockTemplate other = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		Lease first = other.acquire(this.name, null, ONCE);
		// The racer of this instance waits (recorded); a second thread queues behind it locally.
		CompletableFuture<Lease> racing = waitInBackground(instance, WAIT);
		await().atMost(WAKE_BOUND).until(() -> raw().opsForZSet().zCard(this.waitersKey) == 1);
		CompletableFuture<Lease> queued = waitInBackground(instance,
				LockOptions.defaults().waitTime(Duration.ofSeconds(3)));
		Thread.sleep(300);
		first.close();
		// The racer takes the lock with a thread queued: a successor is registered, adopted by the
		// queued thread, which races, is refused, and gives up at its deadline.
		Lease held = racing.get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS);
		try {
			queued.get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS);
			throw new AssertionError("the queued thread got a lock that is held");
		}
		catch (java.util.concurrent.ExecutionException expected) {
			// timed out
		}
		catch (java.util.concurrent.TimeoutException ex) {
			throw new AssertionError("the queued thread did not give up", ex);
		}
		List<String> grants = new java.util.concurrent.CopyOnWriteArrayList<>();
		LettuceConnectionFactory listening = RedisClients.connectionFactory(server);
		this.factories.add(listening);
		org.springframework.data.redis.connection.RedisConnection subscriber = listening.getConnection();
		String probe = "probe-" + UUID.randomUUID();
		List<String> probes = new java.util.concurrent.CopyOnWriteArrayList<>();
		subscriber.subscribe((message, pattern) -> {
			String body = new String(message.getBody(), java.nio.charset.StandardCharsets.UTF_8);
			if (body.startsWith(this.lockKey)) {
				grants.add(body);
			}
			else if (body.equals(probe)) {
				probes.add(body);
			}
		}, RedisLockBackend.DEFAULT_CHANNEL.getBytes(java.nio.charset.StandardCharsets.UTF_8));
		this.closeables.add(subscriber::close);
		// Subscribed once a message published on the channel arrives (a key no lock has).
		await().atMost(Duration.ofSeconds(5)).until(() -> {
			raw().convertAndSend(RedisLockBackend.DEFAULT_CHANNEL, probe);
			return !probes.isEmpty();
		});
		held.close();
		// Nothing recorded nor reserved for the thread that left: the key is free at once, for
		// a try-once caller of another instance (a reservation would refuse it for >= 2 s), and
		// the release granted it to nobody (a successor that outlived its thread would be
		// recorded, drawn and granted, then withdrawn by the grant's copy).
		await().atMost(Duration.ofSeconds(1)).until(() -> !raw().hasKey(this.lockKey));
		await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(grants::isEmpty);
		assertThat(grants).as("grants after the release").isEmpty();
		assertThat(raw().hasKey(this.waitersKey)).as("no record left").isFalse();
		assertThat(other.tryAcquire(this.name, null, ONCE)).isPresent().get().satisfies(Lease::close);
	}

	@Test
	void aLockReservedForARecordOfAnEarlierVersionIsRefusedToEveryoneButItsWaiter() throws Exception {
		RedisLockBackend first = backend(RedisLockBackend.DEFAULT_CHANNEL);
		RedisLockBackend second = backend(RedisLockBackend.DEFAULT_CHANNEL);
		// A waiter of an earlier version (its record is its owner alone) of a process that is not
		// listening here: nobody hands its reservation on.
		record("elsewhere.1", Duration.ofSeconds(30));
		AcquireResult held = first.tryAcquire(this.name, "first.1", Duration.ofSeconds(30));
		assertThat(held.acquired()).isTrue();
		assertThat(first.release(this.name, "first.1")).isTrue();
		assertThat(raw().opsForValue().get(this.lockKey)).isEqualTo("*elsewhere.1");
		assertThat(raw().getExpire(this.lockKey, TimeUnit.MILLISECONDS)).as("the claim window")
			.isGreaterThan(2000);
		assertThat(first.tryAcquire(this.name, "first.2", Duration.ofSeconds(30)).acquired()).isFalse();
		assertThat(second.tryAcquireWaiting(this.name, "second.1", Duration.ofSeconds(30), Duration.ofSeconds(30))
			.acquired()).isFalse();
		assertThat(first.release(this.name, "elsewhere.1")).as("a reservation is not a lock to release").isFalse();
		// A template's waiters are refused too, and withdraw when they give up.
		DefaultLockTemplate template = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		assertThat(template.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ofMillis(300))))
			.isEmpty();
		await().atMost(WAKE_BOUND)
			.untilAsserted(() -> assertThat(raw().opsForZSet().range(this.waitersKey, 0, -1))
				.containsExactly("second.1|30000"));
		AcquireResult claimed = second.tryAcquireWaiting(this.name, "elsewhere.1", Duration.ofSeconds(30),
				Duration.ofSeconds(30));
		assertThat(claimed.acquired()).as("the reserved waiter claims it").isTrue();
		assertThat(claimed.fencingToken()).isGreaterThan(held.fencingToken());
		assertThat(raw().opsForValue().get(this.lockKey)).as("owned and marked: a waiter remains recorded")
			.isEqualTo("elsewhere.1*");
		// Its release makes the remaining recorded waiter (of this version) the holder.
		assertThat(second.release(this.name, "elsewhere.1")).isTrue();
		assertThat(raw().opsForValue().get(this.lockKey)).isEqualTo("second.1");
	}

	@Test
	void aReleaseRecordsTheReleasingProcesssNextWaiterAndTellsItFromTheAnswer() throws Exception {
		RedisLockBackend backend = backend(RedisLockBackend.DEFAULT_CHANNEL);
		List<String> grants = new java.util.concurrent.CopyOnWriteArrayList<>();
		AutoCloseable subscription = backend.subscribe((key) -> {
		}, (key, owner, token) -> grants.add(key + " " + owner + " " + token + " " + Thread.currentThread().getName()));
		this.closeables.add(subscription);
		await().atMost(Duration.ofSeconds(60)).until(backend::isListening);
		AcquireResult first = backend.tryAcquire(this.name, "holder.1", Duration.ofSeconds(30));
		assertThat(first.acquired()).isTrue();
		// Contended (as when another process's waiter was refused), but no waiter recorded yet.
		assertThat(backend.tryAcquire(this.name, "other.1", Duration.ofSeconds(30)).acquired()).isFalse();
		assertThat(backend.release(this.name, "holder.1", "next.1", Duration.ofSeconds(20), Duration.ofSeconds(10)))
			.isTrue();
		assertThat(raw().opsForValue().get(this.lockKey)).as("the only recorded waiter drew it: its lock")
			.isEqualTo("next.1");
		assertThat(raw().getExpire(this.lockKey, TimeUnit.MILLISECONDS)).as("its lease time")
			.isBetween(15_000L, 20_000L);
		long token = Long.parseLong(raw().opsForValue().get(this.fenceKey));
		assertThat(token).as("a token taken for it").isGreaterThan(first.fencingToken());
		// The announcement may come first (on the subscription's I/O thread), but the answer's
		// dispatch has happened when release returns.
		assertThat(grants).as("told from the answer, with the token, on the releasing thread")
			.contains(this.name + " next.1 " + token + " " + Thread.currentThread().getName());
		AcquireResult again = backend.tryAcquireWaiting(this.name, "next.1", Duration.ofSeconds(30),
				Duration.ofSeconds(10));
		assertThat(again.acquired()).as("idempotent for the holder").isTrue();
		assertThat(again.fencingToken()).isEqualTo(token);
		assertThat(raw().getExpire(this.lockKey, TimeUnit.MILLISECONDS)).as("renewed to its lease time")
			.isGreaterThan(20_000L);
	}

	@Test
	void aLockHandedToTheReleasingProcesssNextWaiterIsNotPublishedButOneHandedToAnotherWaiterIs() throws Exception {
		RedisLockBackend backend = backend(RedisLockBackend.DEFAULT_CHANNEL);
		List<String> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
		AutoCloseable subscription = backend.subscribe((key) -> {
		}, (key, owner, token) -> heard.add(owner + " " + token));
		this.closeables.add(subscription);
		await().atMost(Duration.ofSeconds(60)).until(backend::isListening);
		List<String> published = publishedGrants();
		AcquireResult first = backend.tryAcquire(this.name, "holder.1", Duration.ofSeconds(30));
		assertThat(first.acquired()).isTrue();
		assertThat(backend.tryAcquire(this.name, "other.1", Duration.ofSeconds(30)).acquired()).isFalse();
		assertThat(backend.release(this.name, "holder.1", "next.1", Duration.ofSeconds(20), Duration.ofSeconds(10)))
			.isTrue();
		assertThat(raw().opsForValue().get(this.lockKey)).isEqualTo("next.1");
		long token = Long.parseLong(raw().opsForValue().get(this.fenceKey));
		assertThat(heard).as("told from the answer").containsExactly("next.1 " + token);
		// Its own process learns it from the answer: no other process's subscription has to wake
		// for a message addressed to nobody there.
		await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(published::isEmpty);
		assertThat(heard).as("one copy only").hasSize(1);
		// A waiter of another process hears its grant only from the announcement.
		assertThat(backend(RedisLockBackend.DEFAULT_CHANNEL)
			.tryAcquireWaiting(this.name, "remote.1", Duration.ofSeconds(30), Duration.ofSeconds(30))
			.acquired()).as("refused and recorded").isFalse();
		assertThat(backend.release(this.name, "next.1")).isTrue();
		assertThat(raw().opsForValue().get(this.lockKey)).isEqualTo("remote.1");
		long remoteToken = Long.parseLong(raw().opsForValue().get(this.fenceKey));
		await().atMost(WAKE_BOUND)
			.untilAsserted(() -> assertThat(published).containsExactly(this.lockKey + "remote.1#" + remoteToken));
	}

	/** Messages on the release channel that name this test's lock, from a subscriber that listens when this returns. */
	private List<String> publishedGrants() {
		List<String> grants = new java.util.concurrent.CopyOnWriteArrayList<>();
		LettuceConnectionFactory listening = RedisClients.connectionFactory(server);
		this.factories.add(listening);
		org.springframework.data.redis.connection.RedisConnection subscriber = listening.getConnection();
		String probe = "probe-" + UUID.randomUUID();
		List<String> probes = new java.util.concurrent.CopyOnWriteArrayList<>();
		subscriber.subscribe((message, pattern) -> {
			String body = new String(message.getBody(), java.nio.charset.StandardCharsets.UTF_8);
			if (body.startsWith(this.lockKey)) {
				grants.add(body);
			}
			else if (body.equals(probe)) {
				probes.add(body);
			}
		}, RedisLockBackend.DEFAULT_CHANNEL.getBytes(java.nio.charset.StandardCharsets.UTF_8));
		this.closeables.add(subscriber::close);
		await().atMost(Duration.ofSeconds(5)).until(() -> {
			raw().convertAndSend(RedisLockBackend.DEFAULT_CHANNEL, probe);
			return !probes.isEmpty();
		});
		return grants;
	}

	@Test
	void aLostGrantIsMadeGoodByTheWaitersNextPollWhichFindsItHoldsTheLock() throws Exception {
		DefaultLockTemplate releasing = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		// Listens on another channel: it never hears the grant.
		Duration poll = Duration.ofSeconds(2);
		DefaultLockTemplate deaf = listeningTemplate("holdfast:elsewhere", poll);
		Lease held = releasing.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(deaf, LockOptions.defaults().waitTime(SLOW_POLL));
		await().atMost(WAKE_BOUND).until(() -> raw().opsForZSet().zCard(this.waitersKey) == 1);
		String record = raw().opsForZSet().range(this.waitersKey, 0, 0).iterator().next();
		assertThat(record).as("owner and lease time").endsWith("|" + SLOW_POLL.toMillis());
		String waiter = record.substring(0, record.lastIndexOf('|'));
		held.close();
		assertThat(raw().opsForValue().get(this.lockKey)).as("the release made the waiter the holder")
			.isEqualTo(waiter);
		long token = Long.parseLong(raw().opsForValue().get(this.fenceKey));
		Lease next = waiting.get(4 * poll.toSeconds(), TimeUnit.SECONDS);
		assertThat(next.isValid()).isTrue();
		assertThat(next.fencingToken()).as("the token the release took for it").isEqualTo(token);
		assertThat(raw().opsForValue().get(this.lockKey)).isEqualTo(waiter);
		next.close();
		await().atMost(WAKE_BOUND).until(() -> !raw().hasKey(this.lockKey));
	}

	@Test
	void aGrantMakesTheWaiterTheHolderWithoutAnotherCall() throws Exception {
		DefaultLockTemplate releasing = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		DefaultLockTemplate other = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		for (boolean blocking : new boolean[] { true, false }) {
			Lease held = releasing.acquire(this.name, null, ONCE);
			CompletableFuture<Lease> waiting = blocking ? waitInBackground(other, WAIT)
					: other.tryAcquireAsync(this.name, null, WAIT);
			await().atMost(WAKE_BOUND).until(() -> raw().opsForZSet().zCard(this.waitersKey) == 1);
			long scriptsBefore = scriptCalls();
			held.close();
			Lease next = waiting.get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS);
			// The release is the only script run: before, the waiter claimed its reservation with an
			// ACQUIRE after the grant.
			assertThat(scriptCalls() - scriptsBefore).as((blocking ? "blocking" : "non-blocking")
					+ ": scripts run from the release to the lease").isEqualTo(1);
			assertThat(next.isValid()).isTrue();
			assertThat(next.fencingToken()).isEqualTo(Long.parseLong(raw().opsForValue().get(this.fenceKey)))
				.isGreaterThan(held.fencingToken());
			if (blocking) {
				next.close();
			}
			else {
				other.releaseAsync(next).toCompletableFuture().get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS);
			}
			// close() returns once the release is sent (release in the background, the default).
			await().atMost(WAKE_BOUND).untilAsserted(() -> assertThat(raw().hasKey(this.lockKey)).isFalse());
		}
	}

	@Test
	void aWaiterWithdrawnAsItIsDrawnLeavesTheLockFreeAtOnce() throws Exception {
		RedisLockBackend backend = backend(RedisLockBackend.DEFAULT_CHANNEL);
		assertThat(backend.tryAcquire(this.name, "holder.1", Duration.ofMinutes(1)).acquired()).isTrue();
		assertThat(backend.tryAcquireWaiting(this.name, "waiter.1", Duration.ofMinutes(1), Duration.ofMinutes(1))
			.acquired()).isFalse();
		assertThat(backend.release(this.name, "holder.1")).isTrue();
		assertThat(raw().opsForValue().get(this.lockKey)).as("handed to the waiter for its lease time")
			.isEqualTo("waiter.1");
		// Its acquisition ended (timed out) as the release drew it: nobody will use the lock.
		backend.withdraw(this.name, "waiter.1");
		await().atMost(WAKE_BOUND).until(() -> !raw().hasKey(this.lockKey));
		assertThat(backend.tryAcquire(this.name, "other.1", Duration.ofMinutes(1)).acquired()).isTrue();
		// A withdrawal of an owner that does not hold the lock leaves it alone.
		backend.withdraw(this.name, "waiter.1");
		assertThat(backend.release(this.name, "other.1")).isTrue();
	}

	/** Scripts that Redis ran (EVALSHA and EVAL), from INFO commandstats. */
	private long scriptCalls() {
		java.util.Properties stats = raw().execute(
				(org.springframework.data.redis.core.RedisCallback<java.util.Properties>) (connection) -> connection
					.serverCommands()
					.info("commandstats"));
		long calls = 0;
		for (String command : List.of("cmdstat_evalsha", "cmdstat_eval")) {
			String value = stats.getProperty(command);
			if (value != null) {
				calls += Long.parseLong(value.substring(value.indexOf("calls=") + 6, value.indexOf(',')));
			}
		}
		return calls;
	}

	@Test
	void aGrantForAnOwnerOfThisInstanceNotKnownGoneIsLeftAlone() throws Exception {
		DefaultLockTemplate instance = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		Lease probe = instance.acquire(this.name, null, ONCE);
		String owner = raw().opsForValue().get(this.lockKey);
		probe.close();
		await().atMost(WAKE_BOUND).until(() -> !raw().hasKey(this.lockKey));
		// An owner token of this instance that is not waiting and not known gone: it may have
		// taken the lock and not registered its lease yet, so the instance never withdraws it.
		String gone = owner.substring(0, owner.lastIndexOf('.')) + ".999999999";
		record(gone + "|60000", Duration.ofMinutes(1));
		RedisLockBackend other = backend(RedisLockBackend.DEFAULT_CHANNEL);
		assertThat(other.tryAcquire(this.name, "other.1", Duration.ofMinutes(1)).acquired()).isTrue();
		assertThat(other.release(this.name, "other.1")).isTrue();
		// Held by it (for a minute): the instance hears the grant and leaves it alone.
		await().during(Duration.ofSeconds(1))
			.atMost(Duration.ofSeconds(5))
			.until(() -> gone.equals(raw().opsForValue().get(this.lockKey)));
		raw().delete(this.lockKey);
	}

	@Test
	void anInterruptedWaiterWithdrawsItsRecord() throws Exception {
		DefaultLockTemplate holder = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		DefaultLockTemplate other = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		Lease held = holder.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(other, WAIT);
		await().atMost(WAKE_BOUND).until(() -> raw().opsForZSet().zCard(this.waitersKey) == 1);
		this.threads.get(this.threads.size() - 1).interrupt();
		await().atMost(WAKE_BOUND).until(waiting::isDone);
		assertThat(waiting).isCompletedExceptionally();
		await().atMost(WAKE_BOUND).until(() -> !raw().hasKey(this.waitersKey));
		held.close();
		// No waiter recorded: released, not reserved.
		assertThat(holder.tryAcquire(this.name, null, ONCE)).isPresent().get().satisfies(Lease::close);
	}

	@Test
	void aNonBlockingWaiterRecordsItselfAndIsGrantedTheLock() throws Exception {
		DefaultLockTemplate releasing = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		DefaultLockTemplate other = listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL);
		Lease held = releasing.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = other.tryAcquireAsync(this.name, null, WAIT);
		// Where the caller's code runs when the grant completes its lease: never on the client's
		// I/O thread, where a release it sends could be written ahead of the attempt still queued.
		CompletableFuture<String> completedOn = waiting.thenApply((lease) -> Thread.currentThread().getName());
		await().atMost(WAKE_BOUND).until(() -> raw().opsForZSet().zCard(this.waitersKey) == 1);
		held.close();
		assertThat(releasing.tryAcquire(this.name, null, ONCE)).isEmpty();
		Lease next = waiting.get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS);
		assertThat(next.isValid()).isTrue();
		assertThat(completedOn.get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS)).doesNotStartWith("lettuce-");
		other.releaseAsync(next).toCompletableFuture().get(WAKE_BOUND.toSeconds(), TimeUnit.SECONDS);
		// A cancelled one withdraws its record.
		Lease again = releasing.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> cancelled = other.tryAcquireAsync(this.name, null, WAIT);
		await().atMost(WAKE_BOUND).until(() -> raw().opsForZSet().zCard(this.waitersKey) == 1);
		cancelled.cancel(false);
		await().atMost(WAKE_BOUND).until(() -> !raw().hasKey(this.waitersKey));
		again.close();
	}

	/**
	 * Waiters whose wait ends about when the lock is handed to them (a few milliseconds, as long
	 * as a handoff takes), blocking and non-blocking, some cancelled, on two instances: each
	 * withdraws while a grant for it may be on its way or already taken. The holders never
	 * overlap and fencing tokens only grow.
	 */
	@Test
	void waitersThatGiveUpAsTheyAreGrantedNeverMakeTwoHolders() throws Exception {
		List<DefaultLockTemplate> instances = List.of(listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL),
				listeningTemplate(RedisLockBackend.DEFAULT_CHANNEL, SLOW_POLL));
		long begin = System.nanoTime();
		long end = begin + TimeUnit.SECONDS.toNanos(8);
		java.util.concurrent.atomic.AtomicLong lastAcquiredAt = new java.util.concurrent.atomic.AtomicLong(begin);
		java.util.concurrent.atomic.AtomicInteger holders = new java.util.concurrent.atomic.AtomicInteger();
		java.util.concurrent.atomic.AtomicLong lastToken = new java.util.concurrent.atomic.AtomicLong();
		java.util.concurrent.atomic.AtomicInteger acquisitions = new java.util.concurrent.atomic.AtomicInteger();
		java.util.concurrent.atomic.AtomicInteger givenUp = new java.util.concurrent.atomic.AtomicInteger();
		java.util.concurrent.atomic.AtomicReference<String> violation = new java.util.concurrent.atomic.AtomicReference<>();
		java.util.function.Consumer<Lease> hold = (lease) -> {
			try {
				if (holders.incrementAndGet() != 1) {
					violation.compareAndSet(null, "two holders at once");
				}
				long previous = lastToken.getAndSet(lease.fencingToken());
				if (lease.fencingToken() <= previous) {
					violation.compareAndSet(null, "token " + lease.fencingToken() + " after " + previous);
				}
				acquisitions.incrementAndGet();
				lastAcquiredAt.set(System.nanoTime());
				java.util.concurrent.locks.LockSupport.parkNanos(
						java.util.concurrent.ThreadLocalRandom.current().nextLong(2_000_000));
				if (!lease.isValid()) {
					violation.compareAndSet(null, "lease lost while held");
				}
			}
			finally {
				holders.decrementAndGet();
			}
		};
		List<Thread> contenders = new ArrayList<>();
		for (DefaultLockTemplate instance : instances) {
			for (int t = 0; t < 3; t++) {
				contenders.add(new Thread(() -> {
					while (System.nanoTime() - end < 0 && violation.get() == null) {
						Duration wait = Duration.ofNanos(
								java.util.concurrent.ThreadLocalRandom.current().nextLong(500_000, 6_000_000));
						Optional<Lease> lease = instance.tryAcquire(this.name, null,
								LockOptions.defaults().waitTime(wait));
						if (lease.isEmpty()) {
							givenUp.incrementAndGet();
							continue;
						}
						try (Lease held = lease.get()) {
							hold.accept(held);
						}
					}
				}));
			}
			contenders.add(new Thread(() -> {
				while (System.nanoTime() - end < 0 && violation.get() == null) {
					java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
					CompletableFuture<Lease> pending = instance.tryAcquireAsync(this.name, null,
							LockOptions.defaults().waitTime(Duration.ofNanos(random.nextLong(500_000, 6_000_000))));
					if (random.nextBoolean()) {
						java.util.concurrent.locks.LockSupport.parkNanos(random.nextLong(3_000_000));
						pending.cancel(false);
					}
					Lease lease;
					try {
						lease = pending.get(10, TimeUnit.SECONDS);
					}
					catch (java.util.concurrent.CancellationException ex) {
						givenUp.incrementAndGet();
						continue;
					}
					catch (Exception ex) {
						violation.compareAndSet(null, "non-blocking acquisition failed: " + ex);
						return;
					}
					if (lease == null) {
						givenUp.incrementAndGet();
						continue;
					}
					try {
						hold.accept(lease);
					}
					finally {
						instance.releaseAsync(lease);
					}
				}
			}));
		}
		contenders.forEach((thread) -> {
			this.threads.add(thread);
			thread.start();
		});
		for (Thread thread : contenders) {
			thread.join(TimeUnit.SECONDS.toMillis(60));
		}
		// What a failure needs to be told apart: a lock left held by nobody's lease (acquisitions
		// stop early, the key keeps a holder for up to its lease time) or a violation.
		java.util.function.Supplier<String> run = () -> "acquisitions " + acquisitions.get() + ", given up "
				+ givenUp.get() + ", last acquisition at " + TimeUnit.NANOSECONDS.toMillis(lastAcquiredAt.get() - begin)
				+ " ms of 8000, ended after " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - begin)
				+ " ms; key held by " + raw().opsForValue().get(this.lockKey) + " for "
				+ raw().getExpire(this.lockKey, TimeUnit.MILLISECONDS) + " ms more, records "
				+ raw().opsForZSet().range(this.waitersKey, 0, -1);
		System.out.println("Stress run: " + run.get());
		assertThat(violation.get()).as(run).isNull();
		assertThat(acquisitions.get()).as(run).isGreaterThan(100);
		assertThat(givenUp.get()).as(run).isGreaterThan(100);
		// Nothing stays reserved for a waiter that gave up, nor recorded (records last two minutes
		// here): every waiter that gave up withdrew, and no successor outlived its key's queue.
		await().atMost(WAKE_BOUND).untilAsserted(() -> assertThat(raw().hasKey(this.lockKey)).as(run).isFalse());
		await().atMost(WAKE_BOUND).untilAsserted(() -> assertThat(raw().hasKey(this.waitersKey)).as(run).isFalse());
		assertThat(instances.get(0).tryAcquire(this.name, null, ONCE)).isPresent().get().satisfies(Lease::close);
	}

	/** Records {@code owner} as a waiter directly, its record lasting {@code duration} by Redis's clock. */
	private void record(String owner, Duration duration) {
		StringRedisTemplate raw = raw();
		Long now = raw.execute((org.springframework.data.redis.core.RedisCallback<Long>) (connection) -> connection
			.serverCommands()
			.time(TimeUnit.MILLISECONDS));
		raw.opsForZSet().add(this.waitersKey, owner, now + duration.toMillis());
	}

	/** Acquires the lock on another thread, once that thread waits for it. */
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

	private RedisLockBackend backend(String channel) {
		LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
		this.factories.add(factory);
		RedisLockBackend backend = RedisLockBackend.of(factory, channel);
		this.backends.add(backend);
		return backend;
	}

	private DefaultLockTemplate listeningTemplate(String channel, Duration poll) {
		return listeningTemplate(backend(channel), poll, SLOW_POLL);
	}

	private DefaultLockTemplate listeningTemplate(dev.holdfast.spi.LockBackend backend, Duration poll,
			Duration leaseTime) {
		DefaultLockTemplate template = new DefaultLockTemplate(backend,
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(leaseTime).withPollInterval(poll));
		this.closeables.add(template);
		template.prepare();
		await().atMost(Duration.ofSeconds(60)).until(template::releaseEventsListening);
		return template;
	}

	private StringRedisTemplate raw() {
		if (this.raw == null) {
			LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
			this.factories.add(factory);
			this.raw = RedisClients.template(factory);
		}
		return this.raw;
	}

	private StringRedisTemplate raw;

}
