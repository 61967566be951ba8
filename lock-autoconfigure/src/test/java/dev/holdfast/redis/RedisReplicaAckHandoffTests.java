package dev.holdfast.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * {@code replicas-to-ack} with the handoff to recorded waiters: a waiter never holds a lock that
 * no replica acknowledged (the server has no replica): its claim of a reserved lock is an
 * acquisition like any other.
 */
class RedisReplicaAckHandoffTests {

	private static final Duration SLOW = Duration.ofMinutes(1);

	private static RedisServer server;

	private final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private final List<AutoCloseable> closeables = new ArrayList<>();

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
		this.factories.forEach(LettuceConnectionFactory::destroy);
	}

	@Test
	void aWaiterOfABackendWithReplicaAcksIsNeverHandedALockWithoutTheirAcknowledgement() throws Exception {
		DefaultLockTemplate plain = template(ReplicaAcks.NONE);
		DefaultLockTemplate acked = template(new ReplicaAcks(1, Duration.ofMillis(100)));
		// No replica: an ordinary acquisition by the acked template fails closed.
		assertThatThrownBy(() -> acked.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ZERO)))
			.hasMessageContaining("replicas-to-ack");
		Lease held = plain.acquire(this.name, null, LockOptions.defaults().waitTime(Duration.ZERO));
		CompletableFuture<Lease> waiting = new CompletableFuture<>();
		Thread t = new Thread(() -> {
			try {
				waiting.complete(acked.acquire(this.name, null, LockOptions.defaults().waitTime(SLOW)));
			}
			catch (Throwable ex) {
				waiting.completeExceptionally(ex);
			}
		});
		t.start();
		StringRedisTemplate raw = RedisClients.template(factory());
		String waiters = "{" + this.name + "}:waiters";
		await().atMost(Duration.ofSeconds(20)).until(() -> raw.opsForZSet().zCard(waiters) == 1);
		// Recorded (its owner token): the release reserves the lock for it and publishes that.
		assertThat(raw.opsForZSet().range(waiters, 0, -1)).singleElement().asString().doesNotContain("|");
		held.close();
		// The reserved lock is claimed by the waiter's own acquisition, which waits for the
		// replica: with none, it fails closed as the ordinary acquisition did.
		assertThatThrownBy(() -> waiting.get(20, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
			.cause()
			.isInstanceOf(LockBackendException.class)
			.hasStackTraceContaining("replicas-to-ack");
		t.join(20_000);
		assertThat(raw.opsForValue().get("{" + this.name + "}")).as("released after the shortfall").isNull();
	}

	private LettuceConnectionFactory factory() {
		LettuceConnectionFactory f = RedisClients.connectionFactory(server);
		this.factories.add(f);
		return f;
	}

	private DefaultLockTemplate template(ReplicaAcks acks) {
		RedisLockBackend backend = RedisLockBackend.of(factory(), RedisLockBackend.DEFAULT_CHANNEL, acks);
		this.closeables.add(backend);
		DefaultLockTemplate template = new DefaultLockTemplate(backend,
				LockSettings.defaults().withKeyPrefix("").withLeaseTime(SLOW).withPollInterval(SLOW));
		this.closeables.add(0, template);
		template.prepare();
		await().atMost(Duration.ofSeconds(60)).until(template::releaseEventsListening);
		return template;
	}

}
