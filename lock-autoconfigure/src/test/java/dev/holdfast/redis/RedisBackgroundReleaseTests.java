package dev.holdfast.redis;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.context.LifecycleAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.actuate.LockMetricsListener;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Releases sent in the background ({@code holdfast.release-in-background}, on by default), on a
 * real Redis through the auto-configuration. Redis is held back with {@code CLIENT PAUSE WRITE}
 * (scripts wait, the test's own {@code CLIENT UNPAUSE} does not), so "returned before Redis
 * answered" is an order of events, not a timing.
 */
@ExtendWith(OutputCaptureExtension.class)
class RedisBackgroundReleaseTests {

	private static RedisServer server;

	private final String prefix = "background-" + UUID.randomUUID() + ":";

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, DataRedisAutoConfiguration.class,
				HoldfastAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class))
		.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
		.withBean(Jobs.class)
		.withPropertyValues("holdfast.key-prefix=" + this.prefix, "spring.data.redis.timeout=10s");

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		server.close();
	}

	@AfterEach
	void unpause() {
		server.command("CLIENT", "UNPAUSE");
	}

	/** Whether the lock of {@code key} is in Redis (the backend wraps keys in a hash tag). */
	private static long exists(String key) {
		return ((Number) server.command("EXISTS", "{" + key + "}")).longValue();
	}

	private String port() {
		return "spring.data.redis.port=" + server.port();
	}

	@Test
	void annotatedMethodReturnsBeforeRedisAnsweredItsReleaseAndTheNextCallWithTheSameKeyAcquiresAtOnce() {
		this.runner.withPropertyValues(port()).run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			// The method pauses Redis's scripts before it returns: its release waits in Redis.
			CompletableFuture<String> first = CompletableFuture
				.supplyAsync(() -> jobs.run("order-1", () -> server.command("CLIENT", "PAUSE", "20000", "WRITE")));
			assertThat(first.get(5, TimeUnit.SECONDS)).as("returned while Redis holds back its release")
				.isEqualTo("ran order-1");
			assertThat(template.releasesInFlight()).isEqualTo(1);
			assertThat(exists(template.keyFor("job", "order-1"))).isEqualTo(1L);
			// The next call (waitTime 0, THROW) travels behind the release: it never sees "held".
			CompletableFuture<String> next = CompletableFuture.supplyAsync(() -> jobs.run("order-1", () -> null));
			server.command("CLIENT", "UNPAUSE");
			assertThat(next.get(10, TimeUnit.SECONDS)).isEqualTo("ran order-1");
			for (int i = 0; i < 50; i++) {
				assertThat(jobs.run("order-1", () -> null)).isEqualTo("ran order-1");
			}
			await().atMost(Duration.ofSeconds(5)).until(() -> template.releasesInFlight() == 0);
			assertThat(exists(template.keyFor("job", "order-1"))).isEqualTo(0L);
		});
	}

	@Test
	void tryOnceRightAfterItsOwnReleaseAcquiresWhenTheReleaseMeetsNoScript() {
		this.runner.withPropertyValues(port()).run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			LockOptions tryOnce = LockOptions.defaults().waitTime(Duration.ZERO);
			for (int i = 0; i < 20; i++) {
				// A flushed script cache: the acquire script is loaded again by the first acquisition,
				// the release's EVALSHA meets NOSCRIPT and its EVAL goes behind the next acquisition,
				// which Redis runs first and finds held.
				server.command("SCRIPT", "FLUSH");
				template.acquire("noscript", null, tryOnce).close();
				Lease lease = template.tryAcquire("noscript", null, tryOnce)
					.orElseThrow(() -> new AssertionError("not acquired after its own release"));
				template.releaseAsync(lease).toCompletableFuture().get(10, TimeUnit.SECONDS);
			}
		});
	}

	@Test
	void leaseCloseReturnsBeforeRedisAnsweredAndReleaseAsyncCompletesWithTheAnswer() {
		this.runner.withPropertyValues(port()).run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			Lease first = template.acquire("programmatic", "a", LockOptions.defaults());
			Lease second = template.acquire("programmatic", "b", LockOptions.defaults());
			server.command("CLIENT", "PAUSE", "20000", "WRITE");
			CompletableFuture.runAsync(first::close).get(5, TimeUnit.SECONDS);
			CompletableFuture<Void> released = template.releaseAsync(second).toCompletableFuture();
			assertThat(template.releasesInFlight()).isEqualTo(2);
			assertThat(released).as("completes when Redis answered").isNotDone();
			server.command("CLIENT", "UNPAUSE");
			released.get(10, TimeUnit.SECONDS);
			assertThat(exists(second.key())).isEqualTo(0L);
		});
	}

	@Test
	void withReleaseInBackgroundOffCloseWaitsForRedis() {
		this.runner.withPropertyValues(port(), "holdfast.release-in-background=false").run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			Lease lease = template.acquire("synchronous", null, LockOptions.defaults());
			server.command("CLIENT", "PAUSE", "20000", "WRITE");
			CompletableFuture<Void> closing = CompletableFuture.runAsync(lease::close);
			// the release stays unanswered while Redis is paused: close() does not return meanwhile
			await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(5)).until(() -> !closing.isDone());
			server.command("CLIENT", "UNPAUSE");
			closing.get(10, TimeUnit.SECONDS);
			assertThat(template.releasesInFlight()).isZero();
		});
	}

	@Test
	void failedReleaseIsLoggedCountedAndSentAgainUntilRedisTakesItWellBeforeItsTtl(CapturedOutput output) {
		String user = "locker-" + UUID.randomUUID();
		server.command("ACL", "SETUSER", user, "on", ">secret", "~*", "&*", "+@all");
		try {
			this.runner
				.withPropertyValues(port(), "spring.data.redis.username=" + user, "spring.data.redis.password=secret")
				.run((context) -> {
					DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
					MeterRegistry meters = context.getBean(MeterRegistry.class);
					Lease lease = template.acquire("failing", null,
							LockOptions.defaults().leaseTime(Duration.ofSeconds(30)));
					String key = template.keyFor("failing", null);
					// Redis refuses this client's scripts from now on: the release fails (NOPERM).
					server.command("ACL", "SETUSER", user, "-evalsha", "-eval");
					lease.close();
					await().atMost(Duration.ofSeconds(10))
						.until(() -> meters.counter(LockMetricsListener.RELEASE_FAILED, "name", "failing", "backend",
								"redis", "mode", "exclusive")
							.count() == 1.0);
					assertThat(output).contains("Holdfast could not release lock '" + this.prefix + "failing'")
						.contains("sending it again in the background");
					assertThat(template.heldLeases()).isEmpty();
					// Sent again while Redis refuses it: pending (counted for the graceful shutdown),
					// and the lock still held on Redis for most of its time to live.
					assertThat(template.releasesInFlight()).as("the release waiting to be sent again").isOne();
					assertThat(exists(key)).isEqualTo(1L);
					long ttlLeft = ((Number) server.command("PTTL", "{" + key + "}")).longValue();
					assertThat(ttlLeft).isGreaterThan(20_000);
					// Redis takes scripts again: the next retry releases the lock, long before its TTL.
					server.command("ACL", "SETUSER", user, "+evalsha", "+eval");
					await().atMost(Duration.ofSeconds(15)).until(() -> exists(key) == 0L);
					assertThat(template.releasesInFlight()).isZero();
					assertThat(meters.counter(LockMetricsListener.RELEASE_FAILED, "name", "failing", "backend", "redis",
							"mode", "exclusive")
						.count()).as("the failure is counted once, not per retry").isEqualTo(1.0);
					assertThat(output).doesNotContain("Holdfast gave up");
				});
		}
		finally {
			server.command("ACL", "DELUSER", user);
		}
	}

	@Test
	void gracefulShutdownWaitsForReleasesInFlight(CapturedOutput output) {
		this.runner.withPropertyValues(port(), "spring.lifecycle.timeout-per-shutdown-phase=10s").run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			Lease lease = template.acquire("shutdown", null, LockOptions.defaults());
			// Redis answers the release only after 500 ms, by itself; the context closes meanwhile.
			server.command("CLIENT", "PAUSE", "500", "WRITE");
			lease.close();
			assertThat(template.releasesInFlight()).isEqualTo(1);
			context.close();
			assertThat(template.releasesInFlight()).isZero();
			assertThat(exists(template.keyFor("shutdown", null))).isEqualTo(0L);
		});
		assertThat(output).doesNotContain("could not release").doesNotContain("not answered");
	}

	/** A bean with a locked method, proxied by the auto-configuration. */
	public static class Jobs {

		@DistributedLock(name = "job", key = "#order", waitTime = "0s")
		public String run(String order, java.util.function.Supplier<?> body) {
			body.get();
			return "ran " + order;
		}

	}

}
