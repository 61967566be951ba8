package dev.holdfast.aop;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import reactor.core.publisher.Mono;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.DistributedLock;
import dev.holdfast.DistributedSemaphore;
import dev.holdfast.Lease;
import dev.holdfast.LockContext;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.OnLocked;
import dev.holdfast.PermitNotAcquiredException;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;

import static dev.holdfast.aop.AnnotationStartupFailures.assertStartupFailure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * {@code @DistributedSemaphore} in a Spring context on the memory backend: at most {@code permits}
 * calls run at once, each under a permit that is a lease, SKIP and THROW when none is free, and
 * the annotation's errors at startup.
 */
class DistributedSemaphoreTests {

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
		.withPropertyValues("holdfast.backend=memory")
		.withBean(Exports.class);

	@Test
	void atMostPermitsCallsRunAtOnce() {
		this.runner.run((context) -> {
			Exports exports = context.getBean(Exports.class);
			ExecutorService pool = Executors.newFixedThreadPool(8);
			try {
				List<Future<String>> calls = new ArrayList<>();
				for (int i = 0; i < 8; i++) {
					calls.add(pool.submit(() -> exports.export("tenant-1")));
				}
				for (Future<String> call : calls) {
					assertThat(call.get(20, TimeUnit.SECONDS)).matches("holdfast:reports:tenant-1#[012]");
				}
			}
			finally {
				pool.shutdownNow();
			}
			assertThat(exports.mostRunning()).isEqualTo(3);
		});
	}

	@Test
	void theMethodSeesItsPermitAsItsLease() {
		this.runner.run((context) -> {
			LockTemplate template = context.getBean(LockTemplate.class);
			String key = context.getBean(Exports.class).permitKey();
			assertThat(key).matches("holdfast:Exports.permitKey#[01]");
			// both permits: one of them is the method's, given back (in the background) when it returned
			LockOptions soon = LockOptions.defaults().waitTime(Duration.ofSeconds(2));
			try (Lease first = template.acquirePermit("Exports.permitKey", null, 2, soon);
					Lease second = template.acquirePermit("Exports.permitKey", null, 2, soon)) {
				assertThat(List.of(first.key(), second.key())).as("released after").contains(key);
			}
		});
	}

	@Test
	void noFreePermitSkipsOrThrows() {
		this.runner.run((context) -> {
			LockTemplate template = context.getBean(LockTemplate.class);
			Exports exports = context.getBean(Exports.class);
			try (Lease held = CompletableFuture
				.supplyAsync(() -> template.acquirePermit("single", null, 1, LockOptions.defaults()))
				.get()) {
				assertThat(exports.skipping()).isNull();
				assertThatThrownBy(exports::throwing).isInstanceOf(PermitNotAcquiredException.class)
					.hasMessageContaining("Semaphore 'holdfast:single'")
					.hasMessageContaining("all its 1 permits held");
			}
			// the permit is given back in the background: SKIP waits 100 ms only
			await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(exports.skipping()).isEqualTo("ran"));
		});
	}

	@Test
	void aFutureHoldsItsPermitUntilItCompletes() {
		this.runner.run((context) -> {
			LockTemplate template = context.getBean(LockTemplate.class);
			CompletableFuture<String> work = new CompletableFuture<>();
			CompletableFuture<String> result = context.getBean(Exports.class).later(work);
			LockOptions now = LockOptions.defaults().waitTime(Duration.ZERO);
			assertThat(template.tryAcquirePermit("later", null, 1, now)).as("while the future runs").isEmpty();
			work.complete("done");
			assertThat(result.get(5, TimeUnit.SECONDS)).isEqualTo("done");
			try (Lease permit = template.acquirePermit("later", null, 1, now)) {
				assertThat(permit.key()).isEqualTo("holdfast:later#0");
			}
		});
	}

	@Test
	void aFutureThatFailsOrIsCancelledGivesItsPermitBackAndSoDoesAThrowingMethod() {
		this.runner.run((context) -> {
			LockTemplate template = context.getBean(LockTemplate.class);
			Exports exports = context.getBean(Exports.class);
			LockOptions now = LockOptions.defaults().waitTime(Duration.ZERO);
			// a permit kept by mistake would make these wait 2 s and throw
			LockOptions soon = LockOptions.defaults().waitTime(Duration.ofSeconds(2));
			CompletableFuture<String> work = new CompletableFuture<>();
			CompletableFuture<String> failed = exports.later(work);
			work.completeExceptionally(new IllegalStateException("failed"));
			assertThatThrownBy(() -> failed.get(5, TimeUnit.SECONDS)).hasRootCauseMessage("failed");
			template.acquirePermit("later", null, 1, soon).close();
			CompletableFuture<String> cancelled = exports.later(new CompletableFuture<>());
			assertThat(template.tryAcquirePermit("later", null, 1, now)).as("while the future runs").isEmpty();
			cancelled.cancel(true);
			template.acquirePermit("later", null, 1, soon).close();
			assertThatThrownBy(exports::failing).hasMessage("failed");
			template.acquirePermit("later", null, 1, soon).close();
		});
	}

	@Test
	void permitsBelowOneFailAtStartup() {
		assertStartupFailure(NoPermits.class, "has permits = 0", "permits = 3");
	}

	@Test
	void permitsAboveTheMostFailAtStartup() {
		assertStartupFailure(TooManyPermits.class, "has permits = 65", "Give it 1 to 64 permits");
	}

	@Test
	void aNestedCallOfOneSemaphoreFailsSayingPermitsAreNotReentrant() {
		this.runner.run((context) -> {
			LockTemplate template = context.getBean(LockTemplate.class);
			assertThatThrownBy(() -> context.getBean(Exports.class).nested(template))
				.isInstanceOf(PermitNotAcquiredException.class)
				.hasMessageContaining("the one this call runs in")
				.hasMessageContaining("Take the permit once, in the outer call");
		});
	}

	@Test
	void aMalformedKeyFailsAtStartup() {
		assertStartupFailure(BadKey.class, "malformed key expression", "such as key = \"#order.id\"");
	}

	@Test
	void twoMethodsThatDisagreeOnThePermitsOfOneSemaphoreFailAtStartup() {
		assertStartupFailure(Disagreeing.class, "gives semaphore 'exports'", "Give both the same permits");
	}

	@Test
	void aReactiveMethodFailsAtStartup() {
		assertStartupFailure(ReactiveSemaphore.class, "cannot take a permit yet", "LockTemplate.acquirePermit");
	}

	@Test
	void aLockAndASemaphoreOnOneMethodFailAtStartup() {
		assertStartupFailure(LockAndSemaphore.class, "are both on", "Keep one");
	}

	static class Exports {

		final AtomicInteger running = new AtomicInteger();

		final AtomicInteger mostRunning = new AtomicInteger();

		/** The most calls of {@link #export} that ran at once (through the proxy: its fields are the proxy's). */
		public int mostRunning() {
			return this.mostRunning.get();
		}

		@DistributedSemaphore(name = "reports", key = "#tenant", permits = 3, waitTime = "10s")
		public String export(String tenant) throws InterruptedException {
			this.mostRunning.accumulateAndGet(this.running.incrementAndGet(), Math::max);
			try {
				Thread.sleep(200);
				return LockContext.requireLease().key();
			}
			finally {
				this.running.decrementAndGet();
			}
		}

		@DistributedSemaphore(permits = 2)
		public String permitKey() {
			Lease lease = LockContext.requireLease();
			assertThat(lease.fencingToken()).isPositive();
			assertThat(lease.isValid()).isTrue();
			return lease.key();
		}

		@DistributedSemaphore(name = "later", permits = 1)
		public CompletableFuture<String> later(CompletableFuture<String> work) {
			return work;
		}

		@DistributedSemaphore(name = "nested", permits = 1)
		public String nested(LockTemplate template) {
			try (Lease inner = template.acquirePermit("nested", null, 1,
					LockOptions.defaults().waitTime(Duration.ofMillis(200)))) {
				return inner.key();
			}
		}

		@DistributedSemaphore(name = "later", permits = 1)
		public String failing() {
			throw new IllegalStateException("failed");
		}

		@DistributedSemaphore(name = "single", permits = 1, waitTime = "100ms", onLimited = OnLocked.SKIP)
		public String skipping() {
			return "ran";
		}

		@DistributedSemaphore(name = "single", permits = 1, waitTime = "100ms")
		public String throwing() {
			return "ran";
		}

	}

	static class TooManyPermits {

		@DistributedSemaphore(name = "exports", permits = 65)
		public void export() {
		}

	}

	static class NoPermits {

		@DistributedSemaphore(name = "exports", permits = 0)
		public void export() {
		}

	}

	static class BadKey {

		@DistributedSemaphore(name = "exports", key = "#tenant +", permits = 2)
		public void export(String tenant) {
		}

	}

	static class Disagreeing {

		@DistributedSemaphore(name = "exports", permits = 2)
		public void daily() {
		}

		@DistributedSemaphore(name = "exports", permits = 3)
		public void monthly() {
		}

	}

	static class ReactiveSemaphore {

		@DistributedSemaphore(name = "exports", permits = 2)
		public Mono<Void> export() {
			return Mono.empty();
		}

	}

	static class LockAndSemaphore {

		@DistributedLock
		@DistributedSemaphore(name = "exports", permits = 2)
		public void export() {
		}

	}

}
