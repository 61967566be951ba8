package dev.holdfast.autoconfigure;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.context.LifecycleAutoConfiguration;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.Lease;
import dev.holdfast.LockConfigurationException;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * What Holdfast does when the application context starts: one INFO line naming the backend and
 * why, the backend probed and its release subscription opened in the background while the other
 * beans are created (awaited only with {@code holdfast.fail-fast}), and an unreachable backend
 * reported (or, with {@code holdfast.fail-fast}, fatal).
 */
@ExtendWith(OutputCaptureExtension.class)
class LockBackendStartupTests {

	private static RedisServer server;

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, DataRedisAutoConfiguration.class,
				HoldfastAutoConfiguration.class));

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
	}

	@AfterAll
	static void stopRedis() {
		server.close();
	}

	@Test
	void startupNamesTheDetectedBackendAndWhy(CapturedOutput output) {
		this.runner.withPropertyValues("spring.data.redis.port=" + server.port(), "spring.data.redis.timeout=2s")
			.run((context) -> assertThat(output).contains("Holdfast keeps locks in the redis backend "
					+ "(holdfast.backend is unset and a RedisConnectionFactory bean exists)"));
	}

	@Test
	void startupNamesAConfiguredOrApplicationDefinedBackend(CapturedOutput output) {
		this.runner.withPropertyValues("holdfast.backend=memory")
			.run((context) -> assertThat(output)
				.contains("Holdfast keeps locks in the memory backend (holdfast.backend=memory)"));
		this.runner.withBean("myLocks", InMemoryLockBackend.class, InMemoryLockBackend::new)
			.run((context) -> assertThat(output).contains(
					"Holdfast keeps locks in the memory backend (the application defines the LockBackend bean 'myLocks')"));
	}

	@Test
	void startupNamesThePropertyWhateverTheNameOfTheBeanHoldfastMade(CapturedOutput output) {
		// the redlock backend's bean is 'redlockLockBackend', not 'holdfastLockBackend': it was
		// taken for one the application defines
		this.runner.withPropertyValues("holdfast.backend=redlock", "holdfast.redlock.nodes=redis://127.0.0.1:"
				+ server.port())
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(output).contains("Holdfast keeps locks in the redlock backend (holdfast.backend=redlock)")
					.doesNotContain("the application defines");
			});
	}

	@Test
	void withFailFastTheReleaseSubscriptionListensOnceTheContextHasStarted() {
		this.runner
			.withPropertyValues("spring.data.redis.port=" + server.port(), "spring.data.redis.timeout=2s",
					"holdfast.fail-fast=true")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				// Before, the first contended acquisition opened it and missed the releases meanwhile.
				assertThat(context.getBean(RedisLockBackend.class).isListening()).isTrue();
			});
	}

	@Test
	void aStartWithoutFailFastWaitsNeitherForTheProbeNorForTheSubscription() throws IOException {
		// Accepts connections (the kernel does) and never answers: the probe and the subscription hang.
		try (ServerSocket silent = new ServerSocket(0)) {
			this.runner
				.withPropertyValues("spring.data.redis.port=" + silent.getLocalPort(),
						// longer than READY_WAIT, so that a start that waited would take 2 s
						"spring.data.redis.timeout=3s")
				.run((context) -> {
					assertThat(context).hasNotFailed();
					LockBackendStartup startup = new LockBackendStartup(context.getBean(DefaultLockTemplate.class),
							"test", false, null);
					long start = System.nanoTime();
					startup.start();
					// Before, it waited up to 2 s (READY_WAIT) for both.
					assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(1));
					assertThat(context.getBean(RedisLockBackend.class).isListening()).isFalse();
					startup.stop();
				});
		}
	}

	@Test
	void releaseSubscriptionOpensWhileTheOtherBeansAreCreated() {
		// Opening it only when the context starts made the start wait for Lettuce's first connections.
		this.runner.withPropertyValues("spring.data.redis.port=" + server.port(), "spring.data.redis.timeout=2s")
			.withBean(ListeningWhenCreated.class)
			.run((context) -> {
				assertThat(context).hasNotFailed();
				assertThat(context.getBean(ListeningWhenCreated.class).listening).isTrue();
			});
	}

	@Test
	void theFirstContendedAcquisitionAfterTheStartIsWokenByTheRelease() {
		// Polling every minute: only the release's announcement wakes the waiter within the bound.
		this.runner
			.withPropertyValues("spring.data.redis.port=" + server.port(), "spring.data.redis.timeout=2s",
					"holdfast.poll-interval=1m", "holdfast.lease-time=1m")
			.run((context) -> {
				RedisLockBackend backend = context.getBean(RedisLockBackend.class);
				LettuceConnectionFactory otherFactory = new LettuceConnectionFactory(
						new RedisStandaloneConfiguration("127.0.0.1", server.port()));
				otherFactory.afterPropertiesSet();
				otherFactory.start();
				RedisLockBackend otherBackend = RedisLockBackend.of(otherFactory, backend.channel());
				try (DefaultLockTemplate otherInstance = new DefaultLockTemplate(otherBackend,
						LockSettings.defaults().withLeaseTime(Duration.ofMinutes(1)))) {
					String name = "first-" + UUID.randomUUID();
					Lease held = otherInstance.acquire(name, null, LockOptions.defaults().waitTime(Duration.ZERO));
					CompletableFuture<Long> acquiredAt = new CompletableFuture<>();
					Thread waiter = new Thread(() -> {
						try (Lease lease = context.getBean(LockTemplate.class)
							.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofMinutes(1)))) {
							acquiredAt.complete(System.nanoTime());
						}
						catch (RuntimeException ex) {
							acquiredAt.completeExceptionally(ex);
						}
					});
					waiter.start();
					await().during(Duration.ofMillis(100))
						.atMost(Duration.ofSeconds(5))
						.until(() -> waiter.getState() == Thread.State.TIMED_WAITING);
					long releasedAt = System.nanoTime();
					held.close();
					Duration wake = Duration.ofNanos(acquiredAt.get(30, TimeUnit.SECONDS) - releasedAt);
					assertThat(wake).as("the first handoff after the start, polling every minute")
						.isLessThan(Duration.ofSeconds(5));
				}
				finally {
					otherBackend.close();
					otherFactory.destroy();
				}
			});
	}

	@Test
	void closingTheContextClosesTheOpenedSubscriptionQuietly(CapturedOutput output) {
		int[] logFrom = new int[1];
		this.runner.withPropertyValues("spring.data.redis.port=" + server.port(), "spring.data.redis.timeout=2s")
			.run((context) -> {
				RedisLockBackend backend = context.getBean(RedisLockBackend.class);
				await().atMost(Duration.ofSeconds(10)).until(backend::isListening);
				logFrom[0] = output.length();
				context.close();
				// Closed before the connection factory stops, not twice after it.
				assertThat(backend.isListening()).isFalse();
			});
		assertThat(output.toString().substring(logFrom[0])).doesNotContain("WARN").doesNotContain("ERROR");
	}

	@Test
	void closingTheContextWhileTheSubscriptionOpensLogsNoWarning(CapturedOutput output) throws IOException {
		// Accepts connections and never answers: the subscription is still opening when the context closes.
		try (ServerSocket silent = new ServerSocket(0)) {
			// Those of other tests' contexts may still wait for their connection timeout.
			Set<Thread> before = threads("holdfast-redis-subscribe", "holdfast-startup-probe");
			int[] logFrom = new int[1];
			this.runner.withPropertyValues("spring.data.redis.port=" + silent.getLocalPort(), "spring.data.redis.timeout=3s")
				.run((context) -> {
					assertThat(context).hasNotFailed();
					assertThat(context.getBean(RedisLockBackend.class).isListening()).isFalse();
					logFrom[0] = output.length();
				});
			// The opening attempt and the probe (which must say nothing either) fail after the close,
			// each on its own thread (interrupted, or at the connection timeout): awaited both.
			await().atMost(Duration.ofSeconds(10))
				.until(() -> before.containsAll(threads("holdfast-redis-subscribe", "holdfast-startup-probe")));
			assertThat(output.toString().substring(logFrom[0]).lines().filter((line) -> line.matches(".*\\b(WARN|ERROR)\\b.*")))
				.as("WARN and ERROR lines after the close").isEmpty();
		}
	}

	@Test
	void aContextThatFailsToStartEndsTheProbeQuietly(CapturedOutput output) throws IOException {
		// Spring stops only started lifecycles: the probe of a context that failed to start went on
		// against destroyed connection factories and logged a WARN about the backend.
		try (ServerSocket silent = new ServerSocket(0)) {
			this.runner.withPropertyValues("spring.data.redis.port=" + silent.getLocalPort(), "spring.data.redis.timeout=10s")
				.withBean(FailsTheStart.class)
				.run((context) -> assertThat(context).hasFailed());
			await().atMost(Duration.ofSeconds(5)).until(() -> !threadAlive("holdfast-startup-probe"));
			assertThat(output).doesNotContain("Holdfast could not reach");
		}
	}

	@Test
	void unreachableBackendAtStartupIsAWarningNamingTheSettingsToCheck(CapturedOutput output) {
		this.runner.withPropertyValues("spring.data.redis.port=" + unusedPort(), "spring.data.redis.timeout=500ms")
			.run((context) -> {
				assertThat(context).hasNotFailed();
				await().atMost(Duration.ofSeconds(10))
					.until(() -> output.toString().contains("Holdfast could not reach its redis backend at startup"));
				assertThat(output).contains("Check spring.data.redis.* (host and port, or url)")
					.contains("holdfast.fail-fast=true");
			});
	}

	@Test
	void unreachableBackendFailsTheStartupWithFailFast() {
		this.runner
			.withPropertyValues("spring.data.redis.port=" + unusedPort(), "spring.data.redis.timeout=500ms",
					"holdfast.fail-fast=true")
			.run((context) -> {
				assertThat(context).hasFailed();
				FailureAnalysis analysis = new LockConfigurationFailureAnalyzer().analyze(context.getStartupFailure());
				assertThat(analysis).isNotNull();
				assertThat(analysis.getDescription()).startsWith("Holdfast could not reach its redis backend at startup");
				assertThat(analysis.getAction()).contains("spring.data.redis.*").contains("holdfast.fail-fast=false");
				assertThat(analysis.getCause()).isInstanceOf(LockConfigurationException.class);
			});
	}

	@Test
	void reachableBackendStartsWithFailFast() {
		this.runner
			.withPropertyValues("spring.data.redis.port=" + server.port(), "spring.data.redis.timeout=2s",
					"holdfast.fail-fast=true")
			.run((context) -> assertThat(context).hasNotFailed());
	}

	/** Fails the context's start after every singleton, {@link LockBackendStartup} included, was created. */
	static class FailsTheStart implements SmartInitializingSingleton {

		@Override
		public void afterSingletonsInstantiated() {
			throw new IllegalStateException("an unrelated bean fails the start");
		}

	}

	/** A bean created after the template, before the context starts: is the subscription listening by then? */
	static class ListeningWhenCreated {

		final boolean listening;

		ListeningWhenCreated(DefaultLockTemplate template, RedisLockBackend backend) {
			try {
				await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(10)).until(backend::isListening);
			}
			catch (ConditionTimeoutException ex) {
				// asserted by the test, through the field
			}
			this.listening = backend.isListening();
		}

	}

	private static boolean threadAlive(String name) {
		return Thread.getAllStackTraces().keySet().stream().anyMatch((thread) -> thread.getName().equals(name));
	}

	private static Set<Thread> threads(String... names) {
		Set<String> named = Set.of(names);
		return Thread.getAllStackTraces().keySet().stream().filter((thread) -> named.contains(thread.getName()))
			.collect(Collectors.toSet());
	}

	private static int unusedPort() {
		try (ServerSocket socket = new ServerSocket(0)) {
			return socket.getLocalPort();
		}
		catch (IOException ex) {
			throw new IllegalStateException(ex);
		}
	}

}
