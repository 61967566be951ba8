package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.core.LockBackendContractTests;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.testsupport.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The backend contract on Redis Cluster (one node serving every slot, so that commands over
 * keys of several slots fail as on any cluster), plus renewal of locks spread over many slots.
 */
class RedisClusterLockBackendTests extends LockBackendContractTests {

	private static RedisServer server;

	private static final List<LettuceConnectionFactory> factories = new ArrayList<>();

	@BeforeAll
	static void startRedis() {
		server = RedisServer.startCluster();
	}

	@AfterAll
	static void stopRedis() {
		factories.forEach(LettuceConnectionFactory::destroy);
		factories.clear();
		server.close();
	}

	@Override
	protected RedisLockBackend newBackend() {
		LettuceConnectionFactory factory = RedisClients.clusterConnectionFactory(server);
		factories.add(factory);
		return new RedisLockBackend(factory);
	}

	@Test
	void clusterFactoriesGiveTheBlockingBackend() {
		assertThat(RedisLockBackend.of(newFactory(), RedisLockBackend.DEFAULT_CHANNEL))
			.isNotInstanceOf(AsyncLockBackend.class);
	}

	@Test
	void renewsLocksInManySlotsInOneCall() {
		RedisLockBackend backend = newBackend();
		RedisLockBackend other = newBackend();
		String prefix = "cluster-test:" + UUID.randomUUID();
		List<HeldLock> locks = new ArrayList<>();
		Set<String> expected = new HashSet<>();
		for (int i = 0; i < 500; i++) {
			String key = prefix + ":" + i;
			if (i % 50 == 3) {
				other.tryAcquire(key, "thief", Duration.ofSeconds(10));
			}
			else {
				assertThat(backend.tryAcquire(key, "owner-" + i, Duration.ofSeconds(10)).acquired()).isTrue();
				expected.add(key);
			}
			locks.add(new HeldLock(key, "owner-" + i, Duration.ofMinutes(5)));
		}
		StringRedisTemplate raw = RedisClients.template(newFactory());
		// Redis forgot the scripts (as after a restart): the pipelined batch is sent again as EVAL.
		raw.execute((RedisCallback<Object>) (connection) -> {
			connection.scriptingCommands().scriptFlush();
			return null;
		});
		assertThat(backend.renew(locks)).isEqualTo(expected);
		assertThat(raw.getExpire("{" + prefix + ":0}")).isBetween(290L, 300L);
		assertThat(raw.getExpire("{" + prefix + ":3}")).isBetween(5L, 10L);
	}

	@Test
	void fencingTokensIncreaseAndContendedReleasesAreAnnouncedOnCluster() throws Exception {
		RedisLockBackend listening = newBackend();
		RedisLockBackend releasing = newBackend();
		BlockingQueue<String> received = new LinkedBlockingQueue<>();
		listening.subscribe(received::add);
		await().atMost(Duration.ofSeconds(10)).until(listening::isListening);
		String key = "cluster-test:" + UUID.randomUUID();
		long last = 0;
		for (int i = 0; i < 20; i++) {
			AcquireResult result = releasing.tryAcquire(key, "owner-" + i, Duration.ofSeconds(10));
			assertThat(result.fencingToken()).isGreaterThan(last);
			last = result.fencingToken();
			assertThat(listening.tryAcquire(key, "waiter-" + i, Duration.ofSeconds(10)).acquired()).isFalse();
			assertThat(releasing.release(key, "owner-" + i)).isTrue();
			assertThat(received.poll(5, TimeUnit.SECONDS)).isEqualTo(key);
		}
	}

	private LettuceConnectionFactory newFactory() {
		LettuceConnectionFactory factory = RedisClients.clusterConnectionFactory(server);
		factories.add(factory);
		return factory;
	}

}
