package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.LockBackendException;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@code holdfast.redis.replicas-to-ack} on a real primary with one replica: an acquisition
 * counts once the replica has it, and fails closed (released, {@link LockBackendException})
 * when the replica does not acknowledge it in time, on every connection path: Lettuce
 * (connections of the backend's own, blocking and non-blocking, whether or not the factory shares
 * a connection), Jedis.
 */
class RedisReplicaAckTests {

	private static RedisServer primary;

	private static RedisServer replica;

	private static final List<RedisConnectionFactory> factories = new ArrayList<>();

	private final List<RedisLockBackend> backends = new ArrayList<>();

	@BeforeAll
	static void startPrimaryAndReplica() {
		primary = RedisServer.startWith(List.of("--repl-diskless-sync-delay", "0"));
		replica = RedisServer.startReplicaOf(primary);
	}

	@AfterAll
	static void stop() throws Exception {
		for (RedisConnectionFactory factory : factories) {
			((DisposableBean) factory).destroy();
		}
		replica.close();
		primary.close();
	}

	@AfterEach
	void closeBackends() {
		replica.resume();
		this.backends.forEach(RedisLockBackend::close);
	}

	@ParameterizedTest
	@ValueSource(strings = { "lettuce", "lettuce-async", "lettuce-unshared", "jedis" })
	void acquisitionCountsOnceTheReplicaHasIt(String client) throws Exception {
		RedisLockBackend backend = backend(client, new ReplicaAcks(1, Duration.ofSeconds(1)));
		String key = "ack:" + UUID.randomUUID();
		assertThat(acquire(client, backend, key, "owner")).isTrue();
		assertThat(replica.command("GET", "{" + key + "}")).as("the lock on the replica").isEqualTo("owner");
		assertThat(replica.command("EXISTS", "{" + key + "}:fence")).as("its fencing counter").isEqualTo(1L);
		assertThat(acquire(client, backend, key, "other")).as("held").isFalse();
	}

	@ParameterizedTest
	@ValueSource(strings = { "lettuce", "lettuce-async", "lettuce-unshared", "jedis" })
	void acquisitionThatNoReplicaAcknowledgesIsReleasedAndFails(String client) throws Exception {
		RedisLockBackend backend = backend(client, new ReplicaAcks(1, Duration.ofMillis(200)));
		String key = "ack:" + UUID.randomUUID();
		replica.pause();
		long start = System.nanoTime();
		assertThatExceptionOfType(LockBackendException.class).isThrownBy(() -> acquire(client, backend, key, "owner"))
			.withMessageContaining("0 of 1 replica(s) acknowledged it within 200ms")
			.withMessageContaining("holdfast.redis.replicas-to-ack")
			.withMessageContaining("released it");
		assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(200));
		assertThat(primary.command("EXISTS", "{" + key + "}")).as("the lock, released on the primary").isEqualTo(0L);
	}

	@ParameterizedTest
	@ValueSource(strings = { "lettuce", "lettuce-unshared", "jedis" })
	void readHoldThatNoReplicaAcknowledgesFailsAndIsLeftToItsOwnersRelease(String client) throws Exception {
		RedisLockBackend backend = backend(client, new ReplicaAcks(1, Duration.ofMillis(200)));
		String key = "ack:" + UUID.randomUUID();
		// The first take with a patient backend: the replica may still catch up after the last test resumed it.
		assertThat(backend(client, new ReplicaAcks(1, Duration.ofSeconds(5)))
			.tryAcquireShared(key, "first", Duration.ofSeconds(10), Duration.ZERO)
			.acquired()).isTrue();
		assertThat(replica.command("ZCARD", "{" + key + "}:readers")).as("the entry on the replica").isEqualTo(1L);
		replica.pause();
		assertThat(primary.command("ZCARD", "{" + key + "}:readers")).isEqualTo(1L);
		assertThatExceptionOfType(LockBackendException.class)
			.isThrownBy(() -> backend.tryAcquireShared(key, "second", Duration.ofSeconds(10), Duration.ZERO))
			.withMessageContaining("0 of 1 replica(s) acknowledged it within 200ms")
			.withMessageContaining("not released");
		assertThat(primary.command("ZCARD", "{" + key + "}:readers")).as("the second reader's entry, left")
			.isEqualTo(2L);
		assertThat(backend.release(key, "second")).as("its owner releases it").isTrue();
		assertThat(primary.command("ZCARD", "{" + key + "}:readers")).isEqualTo(1L);
	}

	@ParameterizedTest
	@ValueSource(strings = { "lettuce", "lettuce-unshared", "jedis" })
	void aJoinThatNoReplicaAcknowledgesLeavesTheHoldItJoined(String client) throws Exception {
		RedisLockBackend backend = backend(client, new ReplicaAcks(1, Duration.ofMillis(200)));
		String key = "ack:" + UUID.randomUUID();
		// The first take with a patient backend: the replica may still catch up after the last test resumed it.
		assertThat(backend(client, new ReplicaAcks(1, Duration.ofSeconds(5)))
			.tryAcquireShared(key, "first", Duration.ofSeconds(10), Duration.ZERO)
			.acquired()).isTrue();
		assertThat(replica.command("ZCARD", "{" + key + "}:readers")).as("the entry on the replica").isEqualTo(1L);
		replica.pause();
		assertThatExceptionOfType(LockBackendException.class)
			.isThrownBy(() -> backend.tryAcquireShared(key, "first", Duration.ofSeconds(10), Duration.ZERO))
			.withMessageContaining("0 of 1 replica(s) acknowledged it within 200ms");
		assertThat(primary.command("ZCARD", "{" + key + "}:readers")).as("the joined hold's entry, kept")
			.isEqualTo(1L);
		assertThat(primary.command("EXISTS", "{" + key + "}")).as("still read-held").isEqualTo(1L);
		assertThat(backend.tryAcquire(key, "writer", Duration.ofSeconds(10)).acquired()).as("no writer in").isFalse();
	}

	@ParameterizedTest
	@ValueSource(strings = { "lettuce", "jedis" })
	void moreReplicasThanThereAreFailEveryAcquisition(String client) throws Exception {
		RedisLockBackend backend = backend(client, new ReplicaAcks(2, Duration.ofMillis(100)));
		String key = "ack:" + UUID.randomUUID();
		assertThatExceptionOfType(LockBackendException.class).isThrownBy(() -> acquire(client, backend, key, "owner"))
			.withMessageContaining("1 of 2 replica(s)");
	}

	private static boolean acquire(String client, RedisLockBackend backend, String key, String owner)
			throws Exception {
		if (client.equals("lettuce-async")) {
			try {
				return ((AsyncLockBackend) backend).tryAcquireAsync(key, owner, Duration.ofSeconds(10))
					.toCompletableFuture()
					.get(10, TimeUnit.SECONDS)
					.acquired();
			}
			catch (java.util.concurrent.ExecutionException ex) {
				throw (ex.getCause() instanceof RuntimeException runtime) ? runtime : ex;
			}
		}
		return backend.tryAcquire(key, owner, Duration.ofSeconds(10)).acquired();
	}

	private RedisLockBackend backend(String client, ReplicaAcks acks) {
		RedisConnectionFactory factory = switch (client) {
			case "lettuce", "lettuce-async" -> RedisClients.connectionFactory(primary);
			case "lettuce-unshared" -> {
				LettuceConnectionFactory unshared = RedisClients.connectionFactory(primary);
				unshared.setShareNativeConnection(false);
				yield unshared;
			}
			case "jedis" -> RedisClients.jedisConnectionFactory(primary);
			default -> throw new IllegalArgumentException(client);
		};
		factories.add(factory);
		RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL, acks);
		assertThat(backend instanceof AsyncLockBackend).as("non-blocking backend")
			.isEqualTo(client.startsWith("lettuce") && !client.equals("lettuce-unshared"));
		this.backends.add(backend);
		return backend;
	}

}
