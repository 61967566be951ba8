package dev.holdfast.redis;

import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import io.lettuce.core.ClientOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.RedisStaticMasterReplicaConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceClientConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * {@code replicas-to-ack} on a primary without a replica, so that every {@code WAIT} runs until
 * its timeout: the acquisitions and their {@code WAIT}s run on connections of their own, never on
 * the connection that the application's factory shares, so the application's commands answer
 * while acquisitions wait for replicas; a shortfall still fails closed on both paths.
 */
class RedisReplicaAckConnectionTests {

	/** Long, so that the application's commands are measured well inside the WAITs. */
	private static final Duration ACK_TIMEOUT = Duration.ofSeconds(3);

	private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(5);

	private static RedisServer primary;

	private final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private final List<RedisLockBackend> backends = new ArrayList<>();

	private final ExecutorService callers = Executors.newCachedThreadPool();

	private final String clientName = "ack-test-" + UUID.randomUUID();

	@BeforeAll
	static void startPrimaryWithoutReplica() {
		primary = RedisServer.start();
	}

	@AfterAll
	static void stop() {
		primary.close();
	}

	@AfterEach
	void close() {
		this.callers.shutdownNow();
		this.backends.forEach(RedisLockBackend::close);
		this.factories.forEach(LettuceConnectionFactory::destroy);
	}

	@ParameterizedTest
	@ValueSource(strings = { "blocking", "non-blocking" })
	void theApplicationsCommandsAnswerWhileAcquisitionsWaitForReplicas(String path) throws Exception {
		LettuceConnectionFactory factory = factory();
		RedisLockBackend backend = backend(factory, new ReplicaAcks(1, ACK_TIMEOUT));
		StringRedisTemplate application = RedisClients.template(factory);
		String applicationKey = "app:" + UUID.randomUUID();
		application.opsForValue().set(applicationKey, "value");
		List<String> keys = List.of(key(), key(), key());
		List<CompletableFuture<AcquireResult>> acquisitions = new ArrayList<>();
		for (String key : keys) {
			acquisitions.add(acquire(path, backend, key, "owner-" + key));
		}
		await().atMost(ACK_TIMEOUT.dividedBy(2)).until(() -> blockedClients() == 3);

		Duration ping = timed(() -> {
			try (RedisConnection connection = factory.getConnection()) {
				return connection.ping();
			}
		});
		Duration get = timed(() -> application.opsForValue().get(applicationKey));
		assertThat(blockedClients()).as("acquisitions still waiting for replicas after the measurement")
			.isEqualTo(3);
		assertThat(ping).as("PING through the application's factory").isLessThan(Duration.ofMillis(300));
		assertThat(get).as("GET through the application's factory").isLessThan(Duration.ofMillis(300));

		for (int i = 0; i < keys.size(); i++) {
			assertFailsClosed(acquisitions.get(i), keys.get(i));
		}
	}

	@ParameterizedTest
	@ValueSource(strings = { "blocking", "non-blocking" })
	void aShortfallReleasesTheLockAndFailsAndTheNextAcquisitionRunsAgain(String path) throws Exception {
		RedisLockBackend backend = backend(factory(), new ReplicaAcks(1, Duration.ofMillis(100)));
		String key = key();
		assertFailsClosed(acquire(path, backend, key, "owner"), key);
		assertFailsClosed(acquire(path, backend, key, "next"), key);
		primary.command("SET", "{" + key + "}", "someone", "PX", "10000");
		assertThat(acquire(path, backend, key, "third").get(10, TimeUnit.SECONDS).acquired())
			.as("refused without waiting for replicas: nothing written worth waiting for")
			.isFalse();
	}

	@Test
	void atMostTheBoundOfDedicatedConnectionsWaitAtOnceAndClosingTheBackendClosesThem() throws Exception {
		LettuceConnectionFactory factory = factory();
		RedisLockBackend backend = backend(factory, new ReplicaAcks(1, Duration.ofMillis(600)));
		int attempts = AcknowledgedAcquisitions.MAX_CONNECTIONS + 2;
		List<String> keys = new ArrayList<>();
		List<CompletableFuture<AcquireResult>> acquisitions = new ArrayList<>();
		for (int i = 0; i < attempts; i++) {
			keys.add(key());
			acquisitions.add(acquire((i % 2 == 0) ? "blocking" : "non-blocking", backend, keys.get(i), "owner-" + i));
		}
		await().atMost(Duration.ofSeconds(5))
			.until(() -> blockedClients() == AcknowledgedAcquisitions.MAX_CONNECTIONS);
		for (int i = 0; i < attempts; i++) {
			assertFailsClosed(acquisitions.get(i), keys.get(i));
			assertThat(blockedClients()).isLessThanOrEqualTo(AcknowledgedAcquisitions.MAX_CONNECTIONS);
		}
		assertThat(connections()).as("connections opened for acquisitions, none shared with the application")
			.isEqualTo(AcknowledgedAcquisitions.MAX_CONNECTIONS);
		backend.close();
		await().atMost(Duration.ofSeconds(5)).until(() -> connections() == 0);
		assertThatExceptionOfType(LockBackendException.class)
			.isThrownBy(() -> backend.tryAcquire(key(), "late", Duration.ofSeconds(10)))
			.withMessageContaining("closed");
	}

	/**
	 * The first connection still being opened when the command timeout ends: the failure says so
	 * (it said that all connections stayed busy, none being open yet).
	 */
	@Test
	void aConnectionStillBeingOpenedAtTheTimeoutIsNamedAsSuch() throws Exception {
		// Accepts connections (the kernel does) and never answers: the connection's handshake hangs.
		try (ServerSocket silent = new ServerSocket(0)) {
			LettuceConnectionFactory factory = started(new LettuceConnectionFactory(
					new RedisStandaloneConfiguration("127.0.0.1", silent.getLocalPort()),
					LettuceClientConfiguration.builder().commandTimeout(Duration.ofMillis(300)).build()));
			RedisLockBackend backend = backend(factory, new ReplicaAcks(1, Duration.ofMillis(100)));
			assertThatExceptionOfType(LockBackendException.class)
				.isThrownBy(() -> backend.tryAcquire(key(), "owner", Duration.ofSeconds(10)))
				.withMessageContaining("0 open and busy, 1 still being opened")
				.withMessageNotContaining("stayed busy");
		}
	}

	/**
	 * A connection discarded (its acquisition failed) while another call waits is replaced; the
	 * replacement counts as being opened until it is (it was not, and the count of those went
	 * negative: later timeouts named one more busy connection than there were).
	 */
	@Test
	void aConnectionReplacedAfterAFailureLeavesTheCountsOfATimeoutTrue() throws Exception {
		RedisLockBackend backend = backend(started(new LettuceConnectionFactory(
				new RedisStandaloneConfiguration("127.0.0.1", primary.port()),
				LettuceClientConfiguration.builder().commandTimeout(Duration.ofMillis(1500)).build())),
				new ReplicaAcks(1, Duration.ofMillis(600)));
		// 4 calls wait for the replicas on the 4 connections; then one whose script fails (its key
		// is a list), queued first, and 4 more: its connection is discarded while calls wait
		String wrongType = key();
		primary.command("RPUSH", "{" + wrongType + "}", "x");
		List<CompletableFuture<AcquireResult>> first = new ArrayList<>();
		for (int i = 0; i < 9; i++) {
			first.add(acquire("non-blocking", backend, (i == 4) ? wrongType : key(), "owner-" + i));
		}
		for (CompletableFuture<AcquireResult> acquisition : first) {
			assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> acquisition.get(20, TimeUnit.SECONDS));
		}
		// 13 calls: rounds of 4 held 600 ms each; the 13th's wait (1.5 s) ends during the third round
		List<CompletableFuture<AcquireResult>> second = new ArrayList<>();
		for (int i = 0; i < 13; i++) {
			second.add(acquire("non-blocking", backend, key(), "later-" + i));
		}
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> second.get(12).get(20, TimeUnit.SECONDS))
			.havingCause()
			.isInstanceOf(LockBackendException.class)
			.withMessageContaining("4 open and busy")
			.withMessageNotContaining("being opened");
		for (CompletableFuture<AcquireResult> acquisition : second) {
			assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> acquisition.get(20, TimeUnit.SECONDS));
		}
	}

	@Test
	void aBlockingAcquisitionInterruptedWhileAllConnectionsAreBusyGivesUpAndSendsNothing() throws Exception {
		RedisLockBackend backend = backend(factory(), new ReplicaAcks(1, Duration.ofSeconds(1)));
		List<String> keys = new ArrayList<>();
		List<CompletableFuture<AcquireResult>> busy = new ArrayList<>();
		for (int i = 0; i < AcknowledgedAcquisitions.MAX_CONNECTIONS; i++) {
			keys.add(key());
			busy.add(acquire("non-blocking", backend, keys.get(i), "owner-" + i));
		}
		await().atMost(Duration.ofSeconds(5))
			.until(() -> blockedClients() == AcknowledgedAcquisitions.MAX_CONNECTIONS);
		String key = key();
		CompletableFuture<Throwable> outcome = new CompletableFuture<>();
		Thread caller = new Thread(() -> {
			try {
				backend.tryAcquire(key, "interrupted", Duration.ofSeconds(10));
				outcome.complete(null);
			}
			catch (Throwable ex) {
				outcome.complete(Thread.currentThread().isInterrupted() ? ex : new AssertionError("flag lost", ex));
			}
		});
		caller.start();
		await().atMost(Duration.ofSeconds(5)).until(() -> caller.getState() == Thread.State.WAITING);
		caller.interrupt();
		assertThat(outcome.get(1, TimeUnit.SECONDS)).isInstanceOf(LockBackendException.class);
		for (int i = 0; i < keys.size(); i++) {
			assertFailsClosed(busy.get(i), keys.get(i));
		}
		assertThat(primary.command("EXISTS", "{" + key + "}", "{" + key + "}:fence", "{" + key + "}:waiters"))
			.as("the interrupted acquisition, never sent")
			.isEqualTo(0L);
	}

	@Test
	void aStaticMasterReplicaFactoryFailsNamingWhatToUse() {
		LettuceConnectionFactory factory = started(new LettuceConnectionFactory(
				new RedisStaticMasterReplicaConfiguration("127.0.0.1", primary.port()),
				LettuceClientConfiguration.builder().commandTimeout(COMMAND_TIMEOUT).build()));
		RedisLockBackend backend = backend(factory, new ReplicaAcks(1, Duration.ofMillis(100)));
		assertThatExceptionOfType(LockBackendException.class)
			.isThrownBy(() -> backend.tryAcquire(key(), "owner", Duration.ofSeconds(10)))
			.withMessageContaining("static master/replica")
			.withMessageContaining("holdfast.redis.replicas-to-ack=0");
	}

	private void assertFailsClosed(CompletableFuture<AcquireResult> acquisition, String key) {
		assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> acquisition.get(20, TimeUnit.SECONDS))
			.havingCause()
			.isInstanceOf(LockBackendException.class)
			.withMessageContaining("0 of 1 replica(s) acknowledged it")
			.withMessageContaining("released it");
		assertThat(primary.command("EXISTS", "{" + key + "}")).as("the lock, released on the primary").isEqualTo(0L);
	}

	private CompletableFuture<AcquireResult> acquire(String path, RedisLockBackend backend, String key,
			String owner) {
		if (path.equals("non-blocking")) {
			return ((AsyncLockBackend) backend).tryAcquireAsync(key, owner, Duration.ofSeconds(10))
				.toCompletableFuture();
		}
		return CompletableFuture.supplyAsync(() -> backend.tryAcquire(key, owner, Duration.ofSeconds(10)),
				this.callers);
	}

	private static Duration timed(Supplier<?> command) {
		long start = System.nanoTime();
		command.get();
		return Duration.ofNanos(System.nanoTime() - start);
	}

	private static int blockedClients() {
		return Integer.parseInt(primary.info("clients", "blocked_clients"));
	}

	/** Connections of this test's factory's client (the application's shared one is never opened here). */
	private int connections() {
		String clients = primary.commandString("CLIENT", "LIST");
		return (int) clients.lines().filter((client) -> client.contains(" name=" + this.clientName + " ")).count();
	}

	private static String key() {
		return "ack-connection:" + UUID.randomUUID();
	}

	private RedisLockBackend backend(LettuceConnectionFactory factory, ReplicaAcks acks) {
		RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL, acks);
		assertThat(backend).isInstanceOf(AsyncLockBackend.class);
		this.backends.add(backend);
		return backend;
	}

	/** The application's factory: one shared native connection, as Spring Boot configures it. */
	private LettuceConnectionFactory factory() {
		return started(new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", primary.port()),
				LettuceClientConfiguration.builder()
					.commandTimeout(COMMAND_TIMEOUT)
					.clientName(this.clientName)
					.clientOptions(ClientOptions.builder().build())
					.build()));
	}

	/** {@code factory} started, destroyed after the test. */
	private LettuceConnectionFactory started(LettuceConnectionFactory factory) {
		factory.afterPropertiesSet();
		factory.start();
		this.factories.add(factory);
		return factory;
	}

}
