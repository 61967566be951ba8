package dev.holdfast.core;

import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.ConcurrentHashMap;

import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.publisher.Mono;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockListener;
import dev.holdfast.LockOptions;
import dev.holdfast.actuate.LockObservationListener;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A {@link LockListener} or an observation handler that throws never changes what a lock does:
 * the call gets its lock and its result, the lock is released when the call ends, and renewals go
 * on. The failure is logged.
 */
@ExtendWith(OutputCaptureExtension.class)
class FailingListenerTests {

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final DefaultLockTemplate other = new DefaultLockTemplate(this.backend, LockSettings.defaults());

	private final String name = "failing-" + UUID.randomUUID();

	@AfterEach
	void close() {
		this.other.close();
	}

	@Test
	void throwingListenerNeitherFailsTheCallNorLeaksItsLock(CapturedOutput output) {
		try (DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults(),
				new ThrowingListener())) {
			String result = template.executeLocked(this.name, null, LockOptions.defaults(), () -> {
				assertThat(isFree(this.name)).as("held while the action runs").isFalse();
				return "done";
			});
			assertThat(result).isEqualTo("done");
			assertThat(template.heldLeases()).isEmpty();
			assertThat(isFree(this.name)).as("released after the call").isTrue();
			assertThat(template.tryExecuteLocked(this.name, null, LockOptions.defaults(), () -> "again"))
				.contains("again");
			assertThat(isFree(this.name)).isTrue();
		}
		assertThat(output).contains("LockListener").contains("listener failure");
	}

	@Test
	void throwingObservationHandlerNeitherFailsTheCallNorLeaksItsLock(CapturedOutput output) {
		ObservationRegistry registry = ObservationRegistry.create();
		registry.observationConfig().observationHandler(new ThrowingHandler());
		try (DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults(),
				new LockObservationListener(registry))) {
			assertThat(template.executeLocked(this.name, null, LockOptions.defaults(), () -> "done"))
				.isEqualTo("done");
			assertThat(template.heldLeases()).isEmpty();
			assertThat(isFree(this.name)).isTrue();
		}
		assertThat(output).contains("handler failure");
	}

	@ParameterizedTest
	@ValueSource(strings = { "acquiredEvent", "all" })
	void throwingListenerStillCompletesTheFutureOfANonBlockingAcquisition(String failing) throws Exception {
		Set<String> methods = failing.equals("all") ? Set.of() : Set.of(failing);
		try (DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults(),
				new ThrowingListener(methods))) {
			Lease lease = template.tryAcquireAsync(this.name, null, LockOptions.defaults()).get(5, TimeUnit.SECONDS);
			assertThat(lease).isNotNull();
			assertThat(lease.isValid()).isTrue();
			assertThat(isFree(this.name)).isFalse();
			template.releaseAsync(lease).toCompletableFuture().get(5, TimeUnit.SECONDS);
			assertThat(template.heldLeases()).isEmpty();
			assertThat(isFree(this.name)).isTrue();
		}
	}

	@Test
	void throwingListenerStillCompletesAnAnnotatedMono() {
		new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class))
			.withBean(LockBackend.class, () -> this.backend)
			.withBean(LockListener.class, ThrowingListener::new)
			.withBean(Reports.class)
			.run((context) -> {
				Mono<String> report = context.getBean(Reports.class).build(this.name);
				assertThat(report.block(Duration.ofSeconds(5))).isEqualTo("report");
				assertThat(context.getBean(DefaultLockTemplate.class).heldLeases()).isEmpty();
				assertThat(isFree("report")).isTrue();
			});
	}

	@Test
	void throwingLostLeaseHandlingDoesNotStopRenewals() {
		FlakyRenewals flaky = new FlakyRenewals(this.backend);
		try (DefaultLockTemplate template = new DefaultLockTemplate(flaky, LockSettings.defaults(),
				new ThrowingListener(Set.of("lost", "leaseLost")))) {
			Lease shortLease = template.acquire(this.name + "-short", null,
					LockOptions.defaults().leaseTime(Duration.ofMillis(300)));
			Lease longLease = template.acquire(this.name + "-long", null,
					LockOptions.defaults().leaseTime(Duration.ofSeconds(3)));
			// Renewals fail until the short lease expires and is found lost, before the long one is due.
			flaky.failing = true;
			await().atMost(Duration.ofSeconds(5)).until(() -> !shortLease.isValid());
			flaky.failing = false;
			// The long lease is due a third of its time to live after acquisition, then every second.
			await().atMost(Duration.ofSeconds(10)).until(() -> flaky.renewed(longLease.key()) >= 3);
			assertThat(longLease.isValid()).isTrue();
			assertThat(isFree(this.name + "-long")).isFalse();
			longLease.close();
			shortLease.close();
		}
	}

	private boolean isFree(String lock) {
		return this.other.tryAcquire(lock, null, LockOptions.defaults()).map((lease) -> {
			lease.close();
			return true;
		}).orElse(false);
	}

	/** A listener and observation that throw from every method. */
	static final class ThrowingListener implements LockListener {

		private final Set<String> failing;

		/** Throws from every method. */
		ThrowingListener() {
			this(Set.of());
		}

		/** Throws from the methods named, or from every method when none is named. */
		ThrowingListener(Set<String> failing) {
			this.failing = failing;
		}

		private void fail(String method) {
			if (this.failing.isEmpty() || this.failing.contains(method)) {
				throw new IllegalStateException("listener failure: " + method);
			}
		}

		@Override
		public LockObservation acquiring(String name, String key, String backend) {
			return new LockObservation() {

				@Override
				public void acquired(long fencingToken) {
					fail("acquired");
				}

				@Override
				public void notAcquired() {
					fail("notAcquired");
				}

				@Override
				public void failed(Throwable ex) {
					fail("failed");
				}

				@Override
				public void cancelled() {
					fail("cancelled");
				}

				@Override
				public void released() {
					fail("released");
				}

				@Override
				public void lost() {
					fail("lost");
				}

				@Override
				public Observation hold() {
					fail("hold");
					return Observation.NOOP;
				}

				@Override
				public Observation.Scope openScope() {
					fail("openScope");
					return Observation.Scope.NOOP;
				}

			};
		}

		@Override
		public void acquired(String name, String backend, Duration waited) {
			fail("acquiredEvent");
		}

		@Override
		public void notAcquired(String name, String backend, Duration waited) {
			fail("notAcquiredEvent");
		}

		@Override
		public void released(String name, String backend, Duration held) {
			fail("releasedEvent");
		}

		@Override
		public void leaseLost(String name, String backend) {
			fail("leaseLost");
		}

	}

	/** An observation handler that throws when an observation starts, stops or opens a scope. */
	static final class ThrowingHandler implements ObservationHandler<Observation.Context> {

		@Override
		public void onStart(Observation.Context context) {
			throw new IllegalStateException("handler failure: start");
		}

		@Override
		public void onStop(Observation.Context context) {
			throw new IllegalStateException("handler failure: stop");
		}

		@Override
		public void onScopeOpened(Observation.Context context) {
			throw new IllegalStateException("handler failure: scope opened");
		}

		@Override
		public void onScopeClosed(Observation.Context context) {
			throw new IllegalStateException("handler failure: scope closed");
		}

		@Override
		public boolean supportsContext(Observation.Context context) {
			return true;
		}

	}

	/** A memory backend whose renewals fail while {@code failing} is set. */
	static final class FlakyRenewals implements LockBackend, LeaseRenewal {

		private final InMemoryLockBackend delegate;

		private final Map<String, Integer> renewals = new ConcurrentHashMap<>();

		volatile boolean failing;

		FlakyRenewals(InMemoryLockBackend delegate) {
			this.delegate = delegate;
		}

		int renewed(String key) {
			return this.renewals.getOrDefault(key, 0);
		}

		@Override
		public String name() {
			return "flaky";
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			return this.delegate.tryAcquire(key, owner, ttl);
		}

		@Override
		public boolean release(String key, String owner) {
			return this.delegate.release(key, owner);
		}

		@Override
		public Set<String> renew(Collection<HeldLock> locks) {
			if (this.failing) {
				throw new LockBackendException("renewals fail in this test", null);
			}
			Set<String> renewed = this.delegate.renew(locks);
			renewed.forEach((key) -> this.renewals.merge(key, 1, Integer::sum));
			return renewed;
		}

	}

	/** A bean with an annotated method returning a Mono. */
	static class Reports {

		@DistributedLock("report")
		Mono<String> build(String name) {
			return Mono.just("report");
		}

	}

}
