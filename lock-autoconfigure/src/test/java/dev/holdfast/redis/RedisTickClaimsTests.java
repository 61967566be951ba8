package dev.holdfast.redis;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.test.server.RedisServer;

import static dev.holdfast.spi.TickClaims.TickClaim.Outcome.CLAIMED;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link RedisLockBackend#claimTick} on a real redis-server: one record per job that moves
 * forward only, and one winner per tick among independent clients.
 */
class RedisTickClaimsTests {

	private static final Duration TTL = Duration.ofSeconds(10);

	/** A tolerance under which any tick is due: these tests are about the record. */
	private static final Duration ANY_TIME = Duration.ofDays(36500);

	private static RedisServer server;

	private static final List<LettuceConnectionFactory> factories = new ArrayList<>();

	private final String key = "holdfast:job-" + UUID.randomUUID();

	private final Instant tick = Instant.parse("2030-01-01T00:00:00Z");

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		factories.forEach(LettuceConnectionFactory::destroy);
		server.close();
	}

	@Test
	void aTickIsClaimedOnceAndTheRecordOnlyMovesForward() {
		RedisLockBackend first = backend();
		RedisLockBackend second = backend();
		assertThat(first.claimTick(this.key, this.tick, ANY_TIME, TTL).outcome() == CLAIMED).isTrue();
		assertThat(second.claimTick(this.key, this.tick, ANY_TIME, TTL).outcome() == CLAIMED).as("the same tick again").isFalse();
		assertThat(second.claimTick(this.key, this.tick.minusSeconds(1), ANY_TIME, TTL).outcome() == CLAIMED).as("an earlier tick").isFalse();
		assertThat(second.claimTick(this.key, this.tick.plusSeconds(1), ANY_TIME, TTL).outcome() == CLAIMED).as("the next tick").isTrue();
		StringRedisTemplate redis = RedisClients.template(factories.get(0));
		assertThat(redis.keys("*" + this.key + "*")).containsExactly("{" + this.key + "}:tick");
		assertThat(redis.opsForValue().get("{" + this.key + "}:tick")).as("the tick and the claim's id")
			.matches(this.tick.plusSeconds(1).toEpochMilli() + " [0-9]+");
		assertThat(redis.getExpire("{" + this.key + "}:tick")).isBetween(1L, TTL.toSeconds());
	}

	@Test
	void clientsRacingForOneTickHaveExactlyOneWinner() throws Exception {
		List<RedisLockBackend> clients = List.of(backend(), backend(), backend(), backend());
		ExecutorService pool = Executors.newFixedThreadPool(clients.size());
		try {
			for (int round = 0; round < 50; round++) {
				Instant claimed = this.tick.plusSeconds(round);
				List<Callable<Boolean>> claims = new ArrayList<>();
				for (RedisLockBackend client : clients) {
					claims.add(() -> client.claimTick(this.key, claimed, ANY_TIME, TTL).outcome() == CLAIMED);
				}
				int winners = 0;
				for (Future<Boolean> claim : pool.invokeAll(claims)) {
					winners += claim.get() ? 1 : 0;
				}
				assertThat(winners).as("winners of tick %s", claimed).isOne();
			}
		}
		finally {
			pool.shutdownNow();
		}
	}

	private RedisLockBackend backend() {
		LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
		factories.add(factory);
		return new RedisLockBackend(factory);
	}

}
