package dev.holdfast.redis;

import java.time.Duration;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.TickClaims.TickClaim;
import dev.holdfast.test.server.BlackholeProxy;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Scripts that Redis ran but whose answer the client lost: Lettuce, at its default reliability
 * (at least once), writes a command again on the new connection when the connection broke before
 * its answer came. The second run must answer as the first did, not see the first run's write as
 * somebody else's.
 */
class RedisResentCommandTests {

	private static final Duration ANY_TIME = Duration.ofDays(36500);

	private static final Duration TTL = Duration.ofMinutes(5);

	private RedisServer server;

	private BlackholeProxy proxy;

	private LettuceConnectionFactory proxied;

	private LettuceConnectionFactory direct;

	private RedisLockBackend backend;

	private StringRedisTemplate redis;

	private ExecutorService pool;

	@BeforeEach
	void start() throws Exception {
		this.server = RedisServer.start();
		this.proxy = new BlackholeProxy(this.server.port());
		this.proxied = RedisClients.connectionFactory(this.proxy.port());
		this.direct = RedisClients.connectionFactory(this.server);
		this.backend = new RedisLockBackend(this.proxied);
		this.redis = RedisClients.template(this.direct);
		this.pool = Executors.newSingleThreadExecutor();
	}

	@AfterEach
	void stop() throws Exception {
		this.pool.shutdownNow();
		this.backend.close();
		this.proxied.destroy();
		this.direct.destroy();
		this.proxy.close();
		this.server.close();
	}

	@Test
	void tickClaimWhoseAnswerIsLostIsStillClaimedAfterLettuceResendsIt() throws Exception {
		String key = "holdfast:job-" + UUID.randomUUID();
		Instant tick = Instant.parse("2030-01-01T00:00:00.001Z");
		// another job's claim first: the script is loaded and the connection open
		assertThat(this.backend.claimTick(key + "-other", tick.minusMillis(1), ANY_TIME, TTL).outcome())
			.isEqualTo(TickClaim.Outcome.CLAIMED);
		String digits = Long.toString(tick.toEpochMilli());
		TickClaim claim = answerLost(digits, () -> this.backend.claimTick(key, tick, ANY_TIME, TTL),
				() -> this.redis.opsForValue().get("{" + key + "}:tick") != null);
		assertThat(claim.outcome()).as("the claim that Redis ran, resent by Lettuce")
			.isEqualTo(TickClaim.Outcome.CLAIMED);
		assertThat(this.backend.claimTick(key, tick, ANY_TIME, TTL).outcome()).as("the same tick again")
			.isEqualTo(TickClaim.Outcome.TAKEN);
	}

	@Test
	void tryOnceAcquisitionWhoseAnswerIsLostHoldsTheLockWithTheTokenItTookAfterLettuceResendsIt()
			throws Exception {
		String key = "holdfast:lock-" + UUID.randomUUID();
		// another lock first: the script is loaded and the connection open
		String warm = "holdfast:lock-" + UUID.randomUUID();
		assertThat(this.backend.tryAcquire(warm, "warm-" + UUID.randomUUID(), TTL).acquired()).isTrue();
		String owner = "owner-" + UUID.randomUUID();
		AcquireResult result = answerLost(owner, () -> this.backend.tryAcquire(key, owner, TTL),
				() -> this.redis.opsForValue().get("{" + key + "}") != null);
		assertThat(result.acquired()).as("the acquisition that Redis ran, resent by Lettuce (%s)", result).isTrue();
		assertThat(this.redis.opsForValue().get("{" + key + "}")).as("the lock").isEqualTo(owner);
		assertThat(result.fencingToken()).as("the token its first run took")
			.isEqualTo(Long.parseLong(this.redis.opsForValue().get("{" + key + "}:fence")));
		assertThat(this.backend.release(key, owner)).isTrue();
	}

	/**
	 * Runs {@code call}, whose request carries {@code text}, so that Redis runs it but its answer
	 * is thrown away; once {@code applied}, breaks the connection and lets answers through again.
	 */
	private <T> T answerLost(String text, Callable<T> call, Callable<Boolean> applied) throws Exception {
		this.proxy.dropAnswersFrom(text);
		Future<T> answer = this.pool.submit(call);
		await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5)).until(this.proxy::dropping);
		await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5)).until(applied);
		this.proxy.dropAnswers(false);
		this.proxy.cutConnections();
		return answer.get(10, TimeUnit.SECONDS);
	}

}
