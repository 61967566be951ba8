package dev.holdfast.aop;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Schedulers;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ContextConsumer;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockContext;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.OnLocked;
import dev.holdfast.ReactiveLockContext;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * {@code @DistributedLock} on methods returning futures and publishers, in a real application
 * context on the memory backend: the lock is held until the returned value is done. A second
 * template on the same backend plays another instance of the cluster.
 */
class AsyncLockingTests {

	private static final Duration LEASE = Duration.ofSeconds(1);

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
		.withPropertyValues("holdfast.lease-time=" + LEASE.toMillis() + "ms", "holdfast.poll-interval=100ms")
		.withBean(Jobs.class);

	/** Runs {@code test} against the memory backend (non-blocking), or a blocking-only view of it. */
	private void run(String backend, ContextConsumer<AssertableApplicationContext> test) {
		InMemoryLockBackend memory = new InMemoryLockBackend();
		LockBackend bean = switch (backend) {
			case "nonBlocking" -> new NonBlockingOnly(memory);
			case "blocking" -> new BlockingOnly(memory);
			default -> memory;
		};
		this.runner.withBean(LockBackend.class, () -> bean).run(test);
	}

	private void run(ContextConsumer<AssertableApplicationContext> test) {
		run("memory", test);
	}

	/** Another instance of the cluster, on the same backend. */
	private static DefaultLockTemplate otherInstance(AssertableApplicationContext context) {
		return new DefaultLockTemplate(context.getBean(LockBackend.class), LockSettings.defaults());
	}

	private static boolean isFree(DefaultLockTemplate other, String name) {
		return other.tryAcquire(name, null, LockOptions.defaults()).map((lease) -> {
			lease.close();
			return true;
		}).orElse(false);
	}

	private static void awaitFree(DefaultLockTemplate other, String name) {
		await().atMost(Duration.ofSeconds(5)).alias("lock " + name + " released").until(() -> isFree(other, name));
	}

	/** Whether {@code other} trying for {@code duration} could not get the lock. */
	private static boolean heldThroughout(DefaultLockTemplate other, String name, Duration duration) {
		return other.tryAcquire(name, null, LockOptions.defaults().waitTime(duration)).map((lease) -> {
			lease.close();
			return false;
		}).orElse(true);
	}

	@ParameterizedTest
	@ValueSource(strings = { "nonBlocking", "blocking" })
	void monoHoldsTheLockPastTwiceItsLeaseTimeUntilItCompletes(String backend) {
		run(backend, (context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context)) {
				Mono<String> slow = jobs.slowMono(LEASE.multipliedBy(3));
				assertThat(isFree(other, "slow")).as("free until subscribed").isTrue();
				CompletableFuture<String> result = slow.toFuture();
				// the subscription acquires asynchronously on the blocking-only backend
				await().atMost(Duration.ofSeconds(5))
					.until(() -> !context.getBean(DefaultLockTemplate.class).heldLeases().isEmpty());
				assertThat(heldThroughout(other, "slow", LEASE.multipliedBy(2).plusMillis(100)))
					.as("held past twice the lease time").isTrue();
				assertThat(result).isNotDone();
				assertThat(result.get(5, TimeUnit.SECONDS)).isEqualTo("done");
				assertThat(isFree(other, "slow")).as("released before the Mono completed").isTrue();
			}
		});
	}

	@ParameterizedTest
	@ValueSource(strings = { "nonBlocking", "blocking" })
	void cancellingTheSubscriptionReleases(String backend) {
		run(backend, (context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context)) {
				AtomicBoolean started = new AtomicBoolean();
				AtomicBoolean cancelled = new AtomicBoolean();
				Disposable subscription = jobs.forever(started, cancelled).subscribe();
				await().atMost(Duration.ofSeconds(5)).untilTrue(started);
				assertThat(isFree(other, "forever")).isFalse();
				subscription.dispose();
				awaitFree(other, "forever");
				assertThat(cancelled).isTrue();
			}
		});
	}

	@ParameterizedTest
	@ValueSource(strings = { "nonBlocking", "blocking" })
	void cancellingAWaitingSubscriptionLeavesNoLease(String backend) {
		run(backend, (context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context)) {
				Lease held = other.acquire("serial", null, LockOptions.defaults());
				AtomicBoolean ran = new AtomicBoolean();
				Disposable waiting = jobs.serial(0, new AtomicInteger(), new AtomicInteger())
					.doOnNext((i) -> ran.set(true))
					.subscribe();
				await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).untilFalse(ran);
				waiting.dispose();
				held.close();
				await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).untilFalse(ran);
				assertThat(context.getBean(DefaultLockTemplate.class).heldLeases()).isEmpty();
				assertThat(isFree(other, "serial")).isTrue();
			}
		});
	}

	@ParameterizedTest
	@ValueSource(strings = { "nonBlocking", "blocking" })
	void concurrentSubscriptionsOnOneKeyAreSerialised(String backend) {
		run(backend, (context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			AtomicInteger inside = new AtomicInteger();
			AtomicInteger most = new AtomicInteger();
			List<Integer> done = Flux.range(0, 20)
				.flatMap((i) -> jobs.serial(i, inside, most), 20)
				.collectList()
				.block(Duration.ofSeconds(30));
			assertThat(done).hasSize(20).doesNotHaveDuplicates();
			assertThat(most).as("subscriptions inside the lock at once").hasValue(1);
			assertThat(context.getBean(DefaultLockTemplate.class).heldLeases()).isEmpty();
		});
	}

	@Test
	void waitingSubscriptionDoesNotBlockTheSubscribingThread() {
		run("nonBlocking", (context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context)) {
				Lease held = other.acquire("serial", null, LockOptions.defaults());
				// One single-threaded scheduler subscribes all waiters: a blocking wait would stall it.
				CompletableFuture<List<Integer>> all = Flux.range(0, 5)
					.flatMap((i) -> jobs.serial(i, new AtomicInteger(), new AtomicInteger())
						.subscribeOn(Schedulers.single()), 5)
					.collectList()
					.toFuture();
				AtomicBoolean singleIsFree = new AtomicBoolean();
				Mono.fromRunnable(() -> singleIsFree.set(true)).subscribeOn(Schedulers.single()).block(
						Duration.ofSeconds(1));
				assertThat(singleIsFree).isTrue();
				held.close();
				assertThat(all.get(20, TimeUnit.SECONDS)).hasSize(5);
			}
		});
	}

	@Test
	void fluxHoldsTheLockUntilItsLastElement() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context)) {
				List<Boolean> freeDuring = jobs.ticks(3).map((tick) -> isFree(other, "ticks")).collectList().block();
				assertThat(freeDuring).containsExactly(false, false, false);
				assertThat(isFree(other, "ticks")).isTrue();
			}
		});
	}

	@Test
	void failingMonoReleasesAndPassesTheErrorOn() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context)) {
				IllegalStateException failure = new IllegalStateException("boom");
				assertThatExceptionOfType(IllegalStateException.class)
					.isThrownBy(() -> jobs.failingMono(failure).block(Duration.ofSeconds(5)))
					.isSameAs(failure);
				assertThat(isFree(other, "failingMono")).isTrue();
			}
		});
	}

	@Test
	void heldLockFailsTheMonoOnSubscription() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context)) {
				AtomicBoolean ran = new AtomicBoolean();
				Mono<String> mono = jobs.marking(ran);
				try (Lease held = other.acquire("marking", null, LockOptions.defaults())) {
					assertThatExceptionOfType(LockNotAcquiredException.class)
						.isThrownBy(() -> mono.block(Duration.ofSeconds(5)))
						.satisfies((ex) -> assertThat(ex.getLockKey()).isEqualTo("holdfast:marking"));
				}
				assertThat(ran).isFalse();
				assertThat(mono.block(Duration.ofSeconds(5))).isEqualTo("ran");
			}
		});
	}

	@ParameterizedTest
	@ValueSource(strings = { "nonBlocking", "blocking" })
	void skipGivesAnEmptyPublisherWhenTheLockIsHeldAtSubscription(String backend) {
		run(backend, (context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context)) {
				AtomicBoolean ran = new AtomicBoolean();
				Mono<String> mono = jobs.skippingMono(ran);
				Flux<String> flux = jobs.skippingFlux(ran);
				try (Lease held = other.acquire("skipping", null, LockOptions.defaults())) {
					assertThat(mono.hasElement().block(Duration.ofSeconds(5))).isFalse();
					assertThat(flux.collectList().block(Duration.ofSeconds(5))).isEmpty();
				}
				assertThat(ran).isFalse();
				assertThat(mono.block(Duration.ofSeconds(5))).isEqualTo("ran");
				assertThat(flux.collectList().block(Duration.ofSeconds(5))).containsExactly("ran");
			}
		});
	}

	@Test
	void leaseIsInTheReactorContext() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			Lease lease = jobs.leaseOfMono().block(Duration.ofSeconds(5));
			assertThat(lease).isNotNull();
			assertThat(lease.key()).isEqualTo("holdfast:leaseOfMono");
			assertThat(lease.fencingToken()).isPositive();
			assertThat(lease.isValid()).as("released after completion").isFalse();
			assertThat(ReactiveLockContext.currentLease().hasElement().block()).isFalse();
		});
	}

	@Test
	void nestedPublisherWithTheSameKeyReenters() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			assertThat(jobs.outer(jobs).block(Duration.ofSeconds(5))).isEqualTo("inner");
		});
	}

	@Test
	void completableFutureHoldsTheLockUntilItCompletes() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context)) {
				CompletableFuture<String> work = new CompletableFuture<>();
				CompletableFuture<String> result = jobs.later(work);
				assertThat(heldThroughout(other, "later", LEASE.multipliedBy(2).plusMillis(100)))
					.as("held while the future runs").isTrue();
				assertThat(result).isNotDone();
				CompletableFuture.runAsync(() -> work.complete("value"));
				assertThat(result.get(5, TimeUnit.SECONDS)).isEqualTo("value");
				assertThat(isFree(other, "later")).as("released before the caller saw the result").isTrue();
			}
		});
	}

	@Test
	void completableFutureThatFailsReleasesAndKeepsItsException() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context)) {
				CompletableFuture<String> work = new CompletableFuture<>();
				CompletableFuture<String> result = jobs.later(work);
				IllegalStateException failure = new IllegalStateException("boom");
				work.completeExceptionally(failure);
				assertThatExceptionOfType(ExecutionException.class).isThrownBy(() -> result.get(5, TimeUnit.SECONDS))
					.satisfies((ex) -> assertThat(ex.getCause()).isSameAs(failure));
				assertThat(isFree(other, "later")).isTrue();
			}
		});
	}

	@Test
	void cancellingTheReturnedFutureCancelsTheWorkAndReleases() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context)) {
				CompletableFuture<String> work = new CompletableFuture<>();
				CompletableFuture<String> result = jobs.later(work);
				result.cancel(true);
				assertThat(work).isCancelled();
				awaitFree(other, "later");
			}
		});
	}

	@Test
	void methodThatThrowsBeforeReturningAFutureReleasesAtOnce() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context)) {
				assertThatExceptionOfType(IllegalArgumentException.class).isThrownBy(jobs::throwsFirst);
				assertThat(isFree(other, "throwsFirst")).isTrue();
			}
		});
	}

	@Test
	void futureLeaseIsNotReenteredByLaterCallsOnTheCallingThread() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			LockTemplate template = context.getBean(LockTemplate.class);
			CompletableFuture<String> work = new CompletableFuture<>();
			CompletableFuture<String> result = jobs.later(work);
			assertThat(LockContext.currentLease()).isEmpty();
			assertThat(template.tryAcquire("later", null, LockOptions.defaults())).as("held by the future's work")
				.isEmpty();
			work.complete("done");
			result.join();
			try (Lease lease = template.acquire("later", null, LockOptions.defaults())) {
				assertThat(lease.isValid()).isTrue();
			}
		});
	}

	@Test
	void futureInsideASynchronousLockKeepsTheOuterReentrancy() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			LockTemplate template = context.getBean(LockTemplate.class);
			CompletableFuture<String> work = new CompletableFuture<>();
			try (Lease outer = template.acquire("later", null, LockOptions.defaults())) {
				CompletableFuture<String> result = jobs.later(work);
				try (Lease again = template.acquire("later", null, LockOptions.defaults())) {
					assertThat(again.fencingToken()).as("reentered").isEqualTo(outer.fencingToken());
				}
				work.complete("done");
				result.join();
			}
			CompletableFuture<String> unrelated = new CompletableFuture<>();
			try (Lease outer = template.acquire("later", null, LockOptions.defaults())) {
				jobs.later(unrelated);
			}
			assertThat(template.tryAcquire("later", null, LockOptions.defaults()))
				.as("the future's hold is not the thread's").isEmpty();
			unrelated.complete("done");
		});
	}

	@Test
	void skippedFutureIsCompletedWithNull() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			try (DefaultLockTemplate other = otherInstance(context);
					Lease held = other.acquire("skippedFuture", null, LockOptions.defaults())) {
				assertThat(jobs.skippedFuture().toCompletableFuture().get(1, TimeUnit.SECONDS)).isNull();
			}
		});
	}

	@Test
	void renewalContinuesWhileTheFutureRuns() {
		run((context) -> {
			Jobs jobs = context.getBean(Jobs.class);
			CompletableFuture<String> work = new CompletableFuture<>();
			CompletableFuture<String> result = jobs.later(work);
			try (DefaultLockTemplate other = otherInstance(context)) {
				assertThat(heldThroughout(other, "later", LEASE.multipliedBy(3))).as("held for three lease times")
					.isTrue();
			}
			assertThat(context.getBean(DefaultLockTemplate.class).heldLeases()).singleElement()
				.satisfies((lease) -> assertThat(lease.valid()).isTrue());
			work.complete("done");
			result.join();
			assertThat(context.getBean(DefaultLockTemplate.class).heldLeases()).isEmpty();
		});
	}

	static class Jobs {

		@DistributedLock("slow")
		Mono<String> slowMono(Duration duration) {
			return Mono.delay(duration).thenReturn("done");
		}

		// Waits, because the test polls the lock from another instance while this subscribes.
		@DistributedLock(name = "forever", waitTime = "10s")
		Mono<String> forever(AtomicBoolean started, AtomicBoolean cancelled) {
			return Mono.<String>never().doOnSubscribe((subscription) -> started.set(true))
				.doOnCancel(() -> cancelled.set(true));
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

		@DistributedLock("ticks")
		Flux<Long> ticks(int count) {
			return Flux.interval(Duration.ofMillis(50)).take(count);
		}

		@DistributedLock("failingMono")
		Mono<String> failingMono(RuntimeException failure) {
			return Mono.delay(Duration.ofMillis(20)).then(Mono.error(failure));
		}

		@DistributedLock("marking")
		Mono<String> marking(AtomicBoolean ran) {
			return Mono.fromCallable(() -> {
				ran.set(true);
				return "ran";
			});
		}

		@DistributedLock(name = "skipping", onLocked = OnLocked.SKIP)
		Mono<String> skippingMono(AtomicBoolean ran) {
			return marking(ran);
		}

		@DistributedLock(name = "skipping", onLocked = OnLocked.SKIP)
		Flux<String> skippingFlux(AtomicBoolean ran) {
			return Flux.from(marking(ran));
		}

		@DistributedLock("leaseOfMono")
		Mono<Lease> leaseOfMono() {
			return ReactiveLockContext.requireLease().delayElement(Duration.ofMillis(10));
		}

		@DistributedLock("nested")
		Mono<String> outer(Jobs self) {
			return Mono.delay(Duration.ofMillis(10)).then(self.inner());
		}

		@DistributedLock("nested")
		Mono<String> inner() {
			return Mono.just("inner");
		}

		@DistributedLock("later")
		CompletableFuture<String> later(CompletableFuture<String> work) {
			return work;
		}

		@DistributedLock("throwsFirst")
		CompletableFuture<String> throwsFirst() {
			throw new IllegalArgumentException("before any future");
		}

		@DistributedLock(name = "skippedFuture", onLocked = OnLocked.SKIP)
		CompletionStage<String> skippedFuture() {
			return CompletableFuture.completedFuture("ran");
		}

	}

	/** The memory backend with its blocking calls forbidden: proves the reactive path never uses them. */
	static class NonBlockingOnly implements AsyncLockBackend, LeaseRenewal, ReleaseEvents {

		private final InMemoryLockBackend delegate;

		NonBlockingOnly(InMemoryLockBackend delegate) {
			this.delegate = delegate;
		}

		@Override
		public String name() {
			return "memory";
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			if (Schedulers.isInNonBlockingThread()) {
				throw new AssertionError("blocking acquire on " + Thread.currentThread().getName());
			}
			return this.delegate.tryAcquire(key, owner, ttl);
		}

		@Override
		public boolean release(String key, String owner) {
			if (Schedulers.isInNonBlockingThread()) {
				throw new AssertionError("blocking release on " + Thread.currentThread().getName());
			}
			return this.delegate.release(key, owner);
		}

		@Override
		public CompletionStage<AcquireResult> tryAcquireAsync(String key, String owner, Duration ttl) {
			return this.delegate.tryAcquireAsync(key, owner, ttl);
		}

		@Override
		public CompletionStage<Boolean> releaseAsync(String key, String owner) {
			return this.delegate.releaseAsync(key, owner);
		}

		@Override
		public Set<String> renew(Collection<HeldLock> locks) {
			return this.delegate.renew(locks);
		}

		@Override
		public AutoCloseable subscribe(Consumer<String> listener) {
			return this.delegate.subscribe(listener);
		}

	}

	/**
	 * The memory backend without {@link AsyncLockBackend}: reactive acquisitions must move to a
	 * thread that may block, never run on a Reactor non-blocking thread.
	 */
	static class BlockingOnly implements LockBackend, LeaseRenewal, ReleaseEvents {

		private final InMemoryLockBackend delegate;

		final Set<String> acquiringThreads = ConcurrentHashMap.newKeySet();

		BlockingOnly(InMemoryLockBackend delegate) {
			this.delegate = delegate;
		}

		@Override
		public String name() {
			return "memory";
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			if (Schedulers.isInNonBlockingThread()) {
				throw new AssertionError("blocking acquire on " + Thread.currentThread().getName());
			}
			return this.delegate.tryAcquire(key, owner, ttl);
		}

		@Override
		public boolean release(String key, String owner) {
			if (Schedulers.isInNonBlockingThread()) {
				throw new AssertionError("blocking release on " + Thread.currentThread().getName());
			}
			return this.delegate.release(key, owner);
		}

		@Override
		public Set<String> renew(Collection<HeldLock> locks) {
			return this.delegate.renew(locks);
		}

		@Override
		public AutoCloseable subscribe(Consumer<String> listener) {
			return this.delegate.subscribe(listener);
		}

	}

}
