package dev.holdfast.actuate;

import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;

import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.server.RedisServer;

/**
 * Forced release on a real Redis, each template with a connection factory of its own; and, on the
 * same server, a job run now ({@link JobRunNow}).
 */
class RedisForcedReleaseTests extends AbstractForcedReleaseTests {

	private static RedisServer server;

	private static final List<LettuceConnectionFactory> factories = new ArrayList<>();

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		factories.forEach(LettuceConnectionFactory::destroy);
		server.close();
	}

	@Override
	protected LockBackend newBackend() {
		LettuceConnectionFactory factory = new LettuceConnectionFactory(
				new RedisStandaloneConfiguration("127.0.0.1", server.port()));
		factory.start();
		factories.add(factory);
		return RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
	}

	/** A job run now on the same Redis, each instance with a connection factory of its own. */
	@Nested
	class JobRunNow extends AbstractJobRunNowTests {

		@Override
		protected LockBackend newBackend() {
			return RedisForcedReleaseTests.this.newBackend();
		}

	}

}
