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
import org.springframework.data.redis.core.script.RedisScript;

import dev.holdfast.spi.TickClaims.TickClaim;
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
			.matches(this.tick.plusSeconds(1).toEpochMilli() + "\\.0[0-9]+");
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

	/** claim-tick.lua of the version before claim ids, verbatim but for its comments. */
	@SuppressWarnings("rawtypes")
	private static final RedisScript<List> PREVIOUS_CLAIM = RedisScript.of("""
			if redis.replicate_commands ~= nil then redis.replicate_commands() end
			local time = redis.call('TIME')
			local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
			local tick = tonumber(ARGV[1])
			if math.abs(now - tick) > tonumber(ARGV[2]) then
				return {2, now}
			end
			local last = tonumber(redis.call('GET', KEYS[1]) or '-1')
			if last ~= nil and last >= tick then
				return {0, now}
			end
			redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
			return {1, now}
			""", List.class);

	@Test
	void recordsOfThisAndThePreviousVersionRefuseTheSameTicksInBoth() {
		RedisLockBackend backend = backend();
		StringRedisTemplate redis = RedisClients.template(factories.get(0));
		String record = "{" + this.key + "}:tick";
		// Ticks a millisecond apart: the previous version reads '<tick>.0<id>' below the next one.
		Instant next = this.tick.plusMillis(1);
		assertThat(backend.claimTick(this.key, this.tick, ANY_TIME, TTL).outcome()).isEqualTo(CLAIMED);
		assertThat(previousClaim(redis, record, this.tick)).as("this version's tick, by the previous version")
			.isEqualTo(0L);
		assertThat(previousClaim(redis, record, next)).as("the next tick, by the previous version").isEqualTo(1L);
		assertThat(redis.opsForValue().get(record)).isEqualTo(Long.toString(next.toEpochMilli()));
		assertThat(backend.claimTick(this.key, next, ANY_TIME, TTL).outcome())
			.as("the previous version's tick, by this version").isEqualTo(TickClaim.Outcome.TAKEN);
		assertThat(backend.claimTick(this.key, next.plusMillis(1), ANY_TIME, TTL).outcome()).isEqualTo(CLAIMED);
	}

	private static Long previousClaim(StringRedisTemplate redis, String record, Instant tick) {
		List<?> answer = redis.execute(PREVIOUS_CLAIM, List.of(record), Long.toString(tick.toEpochMilli()),
				Long.toString(ANY_TIME.toMillis()), Long.toString(TTL.toMillis()));
		return (Long) answer.get(0);
	}

	private RedisLockBackend backend() {
		LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
		factories.add(factory);
		return new RedisLockBackend(factory);
	}

}
