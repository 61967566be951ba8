package dev.holdfast.redis;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;
import java.util.UUID;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.Lease;
import dev.holdfast.Leadership;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.leader.DefaultLeaderElections;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * On a standalone Redis through Lettuce's shared connection, renewals are sent without blocking
 * from the template's timer (REN-1): a leader's term and a long run's lease, renewed many times,
 * need no Holdfast thread but the timer, which also times the leader group (LDR-9).
 */
class RedisRenewalThreadsTests {

	private static RedisServer server;

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		server.close();
	}

	@Test
	void aTermAndALeaseAreRenewedFromTheTimerAlone() throws Exception {
		// Threads of other tests' templates may live in this JVM: only the ones started here count.
		Set<Thread> before = new HashSet<>(Thread.getAllStackTraces().keySet());
		LettuceConnectionFactory factory = RedisClients.connectionFactory(server);
		try (RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
				DefaultLockTemplate template = new DefaultLockTemplate(backend,
						LockSettings.defaults().withKeyPrefix("renewal-threads-" + UUID.randomUUID() + ":"));
				DefaultLeaderElections elections = new DefaultLeaderElections(template, Duration.ofSeconds(1),
						(event) -> {
						})) {
			assertThat(backend).isInstanceOf(NonBlockingRedisLockBackend.class);
			elections.start();
			Leadership group = elections.join("relay");
			await().atMost(Duration.ofSeconds(10)).until(group::isLeader);
			long term = group.term().orElseThrow().fencingToken();
			try (Lease lease = template.acquire("long-run", null, LockOptions.defaults().leaseTime(Duration.ofMillis(600)))) {
				// A renewal every 200 ms (the lease) and 333 ms (the term): ten times their times to live.
				await().pollDelay(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(4)).until(() -> true);
				assertThat(lease.isValid()).as("the lease was renewed").isTrue();
				assertThat(group.isLeader()).isTrue();
				assertThat(group.term().orElseThrow().fencingToken()).as("the same term, renewed").isEqualTo(term);
				assertThat(holdfastThreadsSince(before)).as("Holdfast's threads started by this template")
					.containsExactly("holdfast-timer-redis");
			}
		}
		finally {
			factory.destroy();
		}
	}

	/**
	 * The names of the live Holdfast threads started since {@code before}, but for the leader
	 * elections' on-demand delivery and campaign threads, whose work is events and releases.
	 */
	private static Set<String> holdfastThreadsSince(Set<Thread> before) {
		return Thread.getAllStackTraces()
			.keySet()
			.stream()
			.filter((thread) -> thread.isAlive() && !before.contains(thread) && thread.getName().startsWith("holdfast-")
					&& !thread.getName().startsWith("holdfast-leader-"))
			.map(Thread::getName)
			.collect(Collectors.toSet());
	}

}
