package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.data.redis.connection.RedisConnectionFactory;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.test.server.RedisSentinels;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The backend on a primary with a replica behind three Sentinels, through Lettuce and Jedis
 * Sentinel connection factories (no failover here; the failover matrix in faults/ kills the
 * primary): a lock held past its lease time keeps another client out, the replica has it, and a
 * replica acknowledgement is awaited.
 */
class RedisSentinelLockBackendTests {

	private static RedisSentinels sentinels;

	private static final List<RedisConnectionFactory> factories = new ArrayList<>();

	private final List<AutoCloseable> closeAfterTest = new ArrayList<>();

	@BeforeAll
	static void startSentinels() {
		sentinels = RedisSentinels.start(1, 3, Duration.ofSeconds(5));
	}

	@AfterAll
	static void stop() throws Exception {
		for (RedisConnectionFactory factory : factories) {
			((DisposableBean) factory).destroy();
		}
		sentinels.close();
	}

	@AfterEach
	void close() throws Exception {
		for (int i = this.closeAfterTest.size() - 1; i >= 0; i--) {
			this.closeAfterTest.get(i).close();
		}
	}

	@ParameterizedTest
	@ValueSource(strings = { "lettuce", "jedis" })
	void lockHeldPastItsLeaseTimeIsOnTheReplicaAndKeepsOthersOut(String client) {
		ReplicaAcks acks = new ReplicaAcks(1, Duration.ofSeconds(1));
		DefaultLockTemplate holder = template(client, acks);
		DefaultLockTemplate other = template(client, acks);
		String name = "sentinel-" + UUID.randomUUID();
		// Renewed every third of it: long enough that a loaded machine's scheduling stalls (over 333 ms
		// seen on 2 busy cores) do not let the lease lapse, which a 500 ms lease did.
		Duration leaseTime = Duration.ofSeconds(2);
		try (Lease lease = holder.acquire(name, null, LockOptions.defaults().leaseTime(leaseTime))) {
			assertThat(sentinels.servers().get(1).command("EXISTS", "{" + lease.key() + "}"))
				.as("the lock on the replica, acknowledged")
				.isEqualTo(1L);
			assertThat(other.tryAcquire(name, null, LockOptions.defaults().waitTime(leaseTime.multipliedBy(2))))
				.isEmpty();
			assertThat(lease.isValid()).isTrue();
		}
		assertThat(other.tryAcquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5)))).isPresent()
			.get()
			.satisfies(Lease::close);
	}

	@ParameterizedTest
	@ValueSource(strings = { "lettuce", "jedis" })
	void readHoldsThroughSentinelAreOnTheReplicaAndKeepAWriterOut(String client) {
		RedisLockBackend backend = backend(client, new ReplicaAcks(1, Duration.ofSeconds(1)));
		String key = "sentinel-read-" + UUID.randomUUID();
		Duration ttl = Duration.ofSeconds(10);
		long token = backend.tryAcquireShared(key, "r1", ttl, Duration.ZERO).fencingToken();
		assertThat(backend.tryAcquireShared(key, "r2", ttl, Duration.ZERO).fencingToken()).isEqualTo(token);
		assertThat(sentinels.servers().get(1).command("ZCARD", "{" + key + "}:readers"))
			.as("both entries on the replica, acknowledged")
			.isEqualTo(2L);
		assertThat(backend.tryAcquire(key, "w", ttl).acquired()).isFalse();
		assertThat(backend.release(key, "r1")).isTrue();
		assertThat(backend.release(key, "r2")).isTrue();
		assertThat(backend.tryAcquire(key, "w", ttl).fencingToken()).isGreaterThan(token);
	}

	private DefaultLockTemplate template(String client, ReplicaAcks acks) {
		DefaultLockTemplate template = new DefaultLockTemplate(backend(client, acks),
				LockSettings.defaults().withPollInterval(Duration.ofMillis(200)));
		this.closeAfterTest.add(template);
		return template;
	}

	private RedisLockBackend backend(String client, ReplicaAcks acks) {
		RedisConnectionFactory factory = client.equals("jedis") ? RedisClients.jedisSentinelConnectionFactory(sentinels)
				: RedisClients.sentinelConnectionFactory(sentinels);
		factories.add(factory);
		RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL, acks);
		assertThat(backend instanceof AsyncLockBackend).isEqualTo(client.equals("lettuce"));
		this.closeAfterTest.add(backend);
		return backend;
	}

}
