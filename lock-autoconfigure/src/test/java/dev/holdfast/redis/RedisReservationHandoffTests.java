package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The reservation handoff where the releasing instance has a waiter of its own: its release
 * names it, so that it is drawn beside the other instances' recorded waiters, and the drawn one
 * claims the lock with its own acquisition. With {@code replicas-to-ack} (the claim is an
 * acquisition the replica must acknowledge) and without. On a real primary with one replica.
 * Poll interval and lease time are a minute and the wait time {@link #WAIT_TIME}: a waiter that
 * is not woken by its reservation sleeps past the bound {@link #PROMPT} and fails the test
 * instead of being rescued by a poll.
 */
class RedisReservationHandoffTests {

	private static final Duration SLOW = Duration.ofMinutes(1);

	private static final Duration WAIT_TIME = Duration.ofSeconds(10);

	/** A handoff takes milliseconds; room for a loaded 2-core machine, far below every fallback. */
	private static final Duration PROMPT = Duration.ofSeconds(2);

	private static final LockOptions ONCE = LockOptions.defaults().waitTime(Duration.ZERO);

	private static final LockOptions WAIT = LockOptions.defaults().waitTime(WAIT_TIME);

	private static final ReplicaAcks ONE_REPLICA = new ReplicaAcks(1,
			Duration.ofSeconds(1));

	/** Each round draws between two waiters: both draws occur in 30 rounds but with odds 2^-29. */
	private static final int ROUNDS = 30;

	private static RedisServer primary;

	private static RedisServer replica;

	private final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private final List<AutoCloseable> closeables = new ArrayList<>();

	private final List<Thread> threads = new ArrayList<>();

	private final String name = "reservation-" + UUID.randomUUID();

	private final String lockKey = "{" + this.name + "}";

	private final String waitersKey = "{" + this.name + "}:waiters";

	@BeforeAll
	static void startPrimaryAndReplica() {
		primary = RedisServer.startWith(List.of("--repl-diskless-sync-delay", "0"));
		replica = RedisServer.startReplicaOf(primary);
	}

	@AfterAll
	static void stop() {
		replica.close();
		primary.close();
	}

	@AfterEach
	void close() throws Exception {
		for (Thread thread : this.threads) {
			thread.interrupt();
			thread.join(TimeUnit.SECONDS.toMillis(10));
		}
		for (AutoCloseable closeable : this.closeables) {
			closeable.close();
		}
		this.factories.forEach(LettuceConnectionFactory::destroy);
	}

	/**
	 * replicas-to-ack: the release reserves the lock ({@code *<owner>}) for the local waiter it
	 * names, the only one recorded, and publishes the reservation; the waiter must claim the lock
	 * with its acknowledged attempt at once, not at its wait time's end nor the lease's.
	 * {@code lettuce}: the non-blocking backend, its release in the background;
	 * {@code lettuce-unshared}: the blocking backend, the release on the caller's thread.
	 */
	@ParameterizedTest
	@ValueSource(strings = { "lettuce", "lettuce-unshared" })
	void aLocalWaiterOfABackendWithReplicaAcksClaimsTheLockItsInstancesReleaseReserved(String client)
			throws Exception {
		DefaultLockTemplate instance = template(client, ONE_REPLICA);
		Lease held = instance.acquire(this.name, null, ONCE);
		CompletableFuture<Lease> waiting = waitInBackground(instance);
		// The line's head attempts, refused, and is recorded; then it waits for its reservation.
		awaitRecorded(1);
		awaitParked(lastThread());
		assertThat(waiting).isNotDone();
		long released = System.nanoTime();
		held.close();
		Lease next = waiting.get(WAIT_TIME.toSeconds() + 5, TimeUnit.SECONDS);
		Duration took = Duration.ofNanos(System.nanoTime() - released);
		assertThat(took).as("from the release to the waiter's lease").isLessThan(PROMPT);
		assertThat(next.isValid()).isTrue();
		assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
		// Claimed (not left reserved), by an acquisition the replica acknowledged.
		String value = primary.commandString("GET", this.lockKey);
		assertThat(value).isNotNull().doesNotStartWith("*");
		assertThat(replica.commandString("GET", this.lockKey)).as("the claim on the replica").isEqualTo(value);
		next.close();
		await().atMost(PROMPT.multipliedBy(5)).until(() -> primary.command("EXISTS", this.lockKey).equals(0L));
	}

	/**
	 * Instance A holds the key and has a local waiter; instance B has a waiter. Both are recorded
	 * by their refused attempts, and A's release names its local waiter too. Redis reserves the
	 * lock for one of the two and publishes it; the drawn one claims it promptly, the other keeps
	 * waiting and gets the lock from the next release; never both at once, tokens grow. Both draws
	 * must occur over the rounds. Without replicas and with one (the claims acknowledged).
	 */
	@ParameterizedTest
	@ValueSource(ints = { 0, 1 })
	void aReleaseNamingItsLocalWaiterBesideARemoteRecordedWaiterReservesTheLockForOneAndTheOtherGetsItNext(
			int replicas) throws Exception {
		ReplicaAcks acks = (replicas > 0) ? ONE_REPLICA : ReplicaAcks.NONE;
		DefaultLockTemplate a = template("lettuce", acks);
		DefaultLockTemplate b = template("lettuce", acks);
		int localFirst = 0;
		int remoteFirst = 0;
		for (int round = 0; round < ROUNDS; round++) {
			String as = "round " + round + ": ";
			Lease held = a.acquire(this.name, null, ONCE);
			CompletableFuture<Lease> local = waitInBackground(a);
			awaitRecorded(1);
			awaitParked(lastThread());
			CompletableFuture<Lease> remote = waitInBackground(b);
			awaitRecorded(2);
			awaitParked(lastThread());
			long released = System.nanoTime();
			held.close();
			CompletableFuture.anyOf(local, remote).get(WAIT_TIME.toSeconds() + 5, TimeUnit.SECONDS);
			assertThat(Duration.ofNanos(System.nanoTime() - released)).as(as + "from the release to the drawn waiter")
				.isLessThan(PROMPT);
			boolean localDrawn = local.isDone();
			CompletableFuture<Lease> drawn = localDrawn ? local : remote;
			CompletableFuture<Lease> other = localDrawn ? remote : local;
			Lease first = drawn.get();
			assertThat(first.isValid()).as(as + "the drawn waiter's lease").isTrue();
			assertThat(first.fencingToken()).as(as + "the drawn waiter's token").isGreaterThan(held.fencingToken());
			// Never two holders: the other one waits as long as the drawn one holds.
			await(as + "the other waiter holds nothing while the drawn one holds").during(Duration.ofMillis(100))
				.atMost(Duration.ofSeconds(1))
				.until(() -> !other.isDone());
			released = System.nanoTime();
			first.close();
			Lease second = other.get(WAIT_TIME.toSeconds() + 5, TimeUnit.SECONDS);
			assertThat(Duration.ofNanos(System.nanoTime() - released)).as(as + "from the next release to the other")
				.isLessThan(PROMPT);
			assertThat(second.isValid()).as(as + "the other waiter's lease").isTrue();
			assertThat(second.fencingToken()).as(as + "the other waiter's token").isGreaterThan(first.fencingToken());
			second.close();
			if (localDrawn) {
				localFirst++;
			}
			else {
				remoteFirst++;
			}
			// Releases in the background: gone before the next round's try-once acquisition.
			await().atMost(PROMPT.multipliedBy(5))
				.pollInterval(Duration.ofMillis(5))
				.until(() -> primary.command("EXISTS", this.lockKey).equals(0L));
			assertThat(primary.command("EXISTS", this.waitersKey)).as(as + "no record left").isEqualTo(0L);
		}
		assertThat(localFirst).as("rounds in which A's local waiter was drawn").isPositive();
		assertThat(remoteFirst).as("rounds in which B's recorded waiter was drawn").isPositive();
	}

	/** Waits until {@code count} waiters are recorded beside the lock. */
	private void awaitRecorded(long count) {
		await().atMost(PROMPT.multipliedBy(5))
			.pollInterval(Duration.ofMillis(5))
			.until(() -> primary.command("ZCARD", this.waitersKey).equals(count));
	}

	/** Waits until {@code thread} waits for a wake-up (its attempt answered, nothing in flight). */
	private static void awaitParked(Thread thread) {
		await().atMost(PROMPT.multipliedBy(5))
			.pollInterval(Duration.ofMillis(5))
			.until(() -> thread.getState() == Thread.State.TIMED_WAITING);
	}

	private Thread lastThread() {
		return this.threads.get(this.threads.size() - 1);
	}

	/** Acquires the lock on another thread, waiting up to {@link #WAIT_TIME}. */
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
		return acquired;
	}

	/** A template over its own client, as another process would have, listening for releases. */
	private DefaultLockTemplate template(String client, ReplicaAcks acks) {
		LettuceConnectionFactory factory = RedisClients.connectionFactory(primary);
		if (client.equals("lettuce-unshared")) {
			factory.setShareNativeConnection(false);
		}
		this.factories.add(factory);
		RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL, acks);
		assertThat(backend instanceof dev.holdfast.spi.AsyncLockBackend).isEqualTo(client.equals("lettuce"));
		this.closeables.add(backend);
		DefaultLockTemplate template = new DefaultLockTemplate(backend,
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(SLOW).withPollInterval(SLOW));
		this.closeables.add(0, template);
		template.prepare();
		await().atMost(Duration.ofSeconds(60)).until(template::releaseEventsListening);
		return template;
	}

}
