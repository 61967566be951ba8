package dev.holdfast.redis;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.ReactiveLockContext;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.WaiterHandoff;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * {@code @DistributedLock} on {@code Mono}/{@code Flux} methods on a real Redis, in a real
 * application context, on the backend's non-blocking path: its blocking calls are watched, and
 * none may run on a Reactor non-blocking thread. Another Lettuce client plays another instance.
 */
class RedisReactiveLockingTests {

	private static final Duration LEASE = Duration.ofSeconds(1);

	private static RedisServer server;

	private static LettuceConnectionFactory appFactory;

	private static LettuceConnectionFactory otherFactory;

	@BeforeAll
	static void startRedis() {
		server = RedisServer.start();
		appFactory = RedisClients.connectionFactory(server);
		otherFactory = RedisClients.connectionFactory(server);
	}

	@AfterAll
	static void stopRedis() {
		appFactory.destroy();
		otherFactory.destroy();
		server.close();
	}

	private final WatchedBackend backend = new WatchedBackend(
			RedisLockBackend.of(appFactory, RedisLockBackend.DEFAULT_CHANNEL));

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
		.withPropertyValues("holdfast.lease-time=" + LEASE.toMillis() + "ms", "holdfast.poll-interval=100ms",
				"holdfast.key-prefix=reactive-" + UUID.randomUUID() + ":")
		.withBean(LockBackend.class, () -> this.backend)
		.withBean(Jobs.class);

	private static boolean isFree(DefaultLockTemplate other, String prefix, String name) {
		return other.tryAcquire(name, null, LockOptions.defaults()).map((lease) -> {
			lease.close();
			return true;
		}).orElse(false);
	}

	private static DefaultLockTemplate otherInstance(String prefix) {
		return new DefaultLockTemplate(new RedisLockBackend(otherFactory), LockSettings.defaults().withKeyPrefix(prefix));
	}

	@AfterEach
	void nothingBlockedAReactorThread() {
		assertThat(this.backend.blockingOnReactorThreads).isEmpty();
	}

	@Test
	void reactiveAcquisitionsUseTheNonBlockingCalls() {
		this.runner.run((context) -> {
			assertThat(context.getBean(DefaultLockTemplate.class).supportsNonBlocking()).isTrue();
			Jobs jobs = context.getBean(Jobs.class);
			assertThat(jobs.serial(1, new AtomicInteger(), new AtomicInteger()).block(Duration.ofSeconds(10)))
				.isEqualTo(1);
			assertThat(this.backend.asyncAcquisitions).hasPositiveValue();
			assertThat(this.backend.asyncReleases).hasPositiveValue();
		});
	}

	@Test
	void monoHoldsTheRedisLockPastTwiceItsLeaseTimeAndReleasesOnCompletion() {
		this.runner.run((context) -> {
			String prefix = context.getBean(DefaultLockTemplate.class).settings().keyPrefix();
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(prefix)) {
				CompletableFuture<Long> token = jobs.slow(LEASE.multipliedBy(3)).toFuture();
				// the subscription acquires asynchronously
				await().atMost(Duration.ofSeconds(5))
					.until(() -> !context.getBean(DefaultLockTemplate.class).heldLeases().isEmpty());
				assertThat(other.tryAcquire("slow", null, LockOptions.defaults().waitTime(LEASE.multipliedBy(2).plusMillis(200))))
					.as("another client trying past twice the lease time").isEmpty();
				assertThat(token).isNotDone();
				assertThat(token.get(10, TimeUnit.SECONDS)).as("fencing token from the Reactor context").isPositive();
				assertThat(isFree(other, prefix, "slow")).as("released before the Mono completed").isTrue();
			}
		});
	}

	@Test
	void concurrentSubscriptionsAreSerialised() {
		this.runner.run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			// As the startup probe does in an application (this forwarding backend has none): the
			// shared connection is known before the ten subscriptions, else each of them fetches it
			// within its command timeout (RED-9), which a cold JVM on a loaded machine may exceed.
			this.backend.delegate.checkHealth();
			assertThat(((NonBlockingRedisLockBackend) this.backend.delegate).timedByLettuce()).isTrue();
			AtomicInteger inside = new AtomicInteger();
			AtomicInteger most = new AtomicInteger();
			List<Integer> done = Flux.range(0, 10)
				.flatMap((i) -> jobs.serial(i, inside, most), 10)
				.collectList()
				.block(Duration.ofSeconds(30));
			assertThat(done).hasSize(10);
			assertThat(most).hasValue(1);
			assertThat(this.backend.recordedAsyncAttempts).as("waiting subscriptions recorded themselves")
				.hasPositiveValue();
		});
	}

	@Test
	void cancellationReleases() {
		this.runner.run((context) -> {
			String prefix = context.getBean(DefaultLockTemplate.class).settings().keyPrefix();
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(prefix)) {
				Disposable forever = jobs.forever().subscribe();
				await().atMost(Duration.ofSeconds(5)).until(() -> !isFree(other, prefix, "serial"));
				forever.dispose();
				await().atMost(Duration.ofSeconds(5)).alias("released after cancel")
					.until(() -> isFree(other, prefix, "serial"));
			}
		});
	}

	static class Jobs {

		@DistributedLock("slow")
		Mono<Long> slow(Duration duration) {
			return Mono.delay(duration).then(ReactiveLockContext.requireLease()).map(Lease::fencingToken);
		}

		// Waits, because the test polls the lock from another instance while this subscribes.
		@DistributedLock(name = "serial", waitTime = "10s")
		Mono<Void> forever() {
			return Mono.never();
		}

		@DistributedLock(name = "serial", waitTime = "30s")
		Mono<Integer> serial(int i, AtomicInteger inside, AtomicInteger most) {
			return Mono.fromCallable(() -> {
				most.accumulateAndGet(inside.incrementAndGet(), Math::max);
				return i;
			}).delayElement(Duration.ofMillis(10)).map((value) -> {
				inside.decrementAndGet();
				return value;
			});
		}

	}

	/**
	 * The application's Redis backend, recording every blocking call made on a Reactor
	 * non-blocking thread and counting the non-blocking ones. It forwards {@link WaiterHandoff}
	 * as the real backend offers it, so the app's waiters record themselves and its releases hand
	 * on as in production.
	 */
	static final class WatchedBackend extends ForwardingRedisBackend {

		final List<String> blockingOnReactorThreads = new CopyOnWriteArrayList<>();

		final AtomicInteger asyncAcquisitions = new AtomicInteger();

		final AtomicInteger asyncReleases = new AtomicInteger();

		final AtomicInteger recordedAsyncAttempts = new AtomicInteger();

		WatchedBackend(RedisLockBackend delegate) {
			super(delegate);
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			watch("acquire");
			return super.tryAcquire(key, owner, ttl);
		}

		@Override
		public boolean release(String key, String owner) {
			watch("release");
			return super.release(key, owner);
		}

		@Override
		public CompletionStage<AcquireResult> tryAcquireAsync(String key, String owner, Duration ttl) {
			this.asyncAcquisitions.incrementAndGet();
			return super.tryAcquireAsync(key, owner, ttl);
		}

		@Override
		public CompletionStage<Boolean> releaseAsync(String key, String owner) {
			this.asyncReleases.incrementAndGet();
			return super.releaseAsync(key, owner);
		}

		@Override
		public AcquireResult tryAcquireWaiting(String key, String owner, Duration ttl, Duration recordFor) {
			watch("acquire");
			return super.tryAcquireWaiting(key, owner, ttl, recordFor);
		}

		@Override
		public CompletionStage<AcquireResult> tryAcquireWaitingAsync(String key, String owner, Duration ttl,
				Duration recordFor) {
			this.asyncAcquisitions.incrementAndGet();
			this.recordedAsyncAttempts.incrementAndGet();
			return super.tryAcquireWaitingAsync(key, owner, ttl, recordFor);
		}

		@Override
		public boolean release(String key, String owner, @Nullable String nextLocal) {
			watch("release");
			return super.release(key, owner, nextLocal);
		}

		@Override
		public void releaseAsync(String key, String owner, @Nullable String nextLocal,
				BiConsumer<? super @Nullable Boolean, ? super @Nullable Throwable> whenAnswered) {
			this.asyncReleases.incrementAndGet();
			super.releaseAsync(key, owner, nextLocal, whenAnswered);
		}

		private void watch(String operation) {
			if (Schedulers.isInNonBlockingThread()) {
				this.blockingOnReactorThreads.add(operation + " on " + Thread.currentThread().getName());
			}
		}

	}

}
