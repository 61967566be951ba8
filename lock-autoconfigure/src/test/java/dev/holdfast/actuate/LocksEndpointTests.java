package dev.holdfast.actuate;

import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import org.springframework.boot.actuate.autoconfigure.endpoint.EndpointAutoConfiguration;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.actuate.ClusterLocksView.ClusterLocksDescriptor;
import dev.holdfast.actuate.LocksEndpoint.LeaseDescriptor;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The {@code locks} endpoint in a running context: template leases and scheduled job locks.
 */
class LocksEndpointTests {

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class,
				HoldfastActuatorAutoConfiguration.class, EndpointAutoConfiguration.class))
		.withBean(InMemoryLockBackend.class, () -> this.backend)
		.withPropertyValues("management.endpoints.web.exposure.include=locks");

	@Test
	void backendThatCannotListTheClusterIsAnsweredAsUnsupported() {
		LockBackend locksOnly = locksOnly();
		try (DefaultLockTemplate template = new DefaultLockTemplate(locksOnly, LockSettings.defaults())) {
			LocksEndpoint endpoint = new LocksEndpoint(template);
			ClusterLocksDescriptor cluster = (ClusterLocksDescriptor) endpoint.scope(SecurityContext.NONE, "cluster");
			assertThat(cluster.supported()).isFalse();
			assertThat(cluster.note()).contains("locks-only backend cannot list");
			assertThat(endpoint.release(SecurityContext.NONE, "holdfast:job", null, null).reason())
				.contains("locks-only backend cannot");
			assertThat(endpoint.scope(SecurityContext.NONE, "other")).as("another scope: not found").isNull();
		}
	}

	@Test
	void runningScheduledJobIsListedWithItsLockUntilTheRunEnds() {
		this.runner.withBean(BlockingJob.class).run((context) -> {
			BlockingJob job = context.getBean(BlockingJob.class);
			LocksEndpoint endpoint = context.getBean(LocksEndpoint.class);
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			assertThat(job.running.await(10, TimeUnit.SECONDS)).isTrue();
			try (Lease other = template.acquire("report", null, LockOptions.defaults())) {
				assertThat(endpoint.locks(SecurityContext.NONE).leases()).extracting(LeaseDescriptor::name)
					.containsExactly("nightly-export", "report");
				LeaseDescriptor jobLock = endpoint.locks(SecurityContext.NONE).leases().get(0);
				assertThat(jobLock.key()).isEqualTo("holdfast:nightly-export");
				assertThat(jobLock.fencingToken()).isPositive()
					.as("the token the backend gave the job lock")
					.isEqualTo(other.fencingToken() - 1);
				assertThat(jobLock.valid()).isTrue();
				assertThat(jobLock.acquired()).isBetween(job.startedAt.minusSeconds(1), Instant.now());
				assertThat(Duration.between(jobLock.acquired(), jobLock.expires()))
					.as("the lease time (holdfast.lease-time, 30s, renewed) less drift, not lockAtMostFor")
					.isBetween(Duration.ofSeconds(29), Duration.ofSeconds(30));
			}
			job.finish.countDown();
			await().atMost(Duration.ofSeconds(5)).until(() -> endpoint.locks(SecurityContext.NONE).leases().isEmpty());
		});
	}

	static class BlockingJob {

		final CountDownLatch running = new CountDownLatch(1);

		final CountDownLatch finish = new CountDownLatch(1);

		volatile Instant startedAt = Instant.MIN;

		@SingleInstanceScheduled(fixedDelay = "1h", name = "nightly-export", lockAtMostFor = "60s")
		void export() throws InterruptedException {
			this.startedAt = Instant.now();
			this.running.countDown();
			this.finish.await(10, TimeUnit.SECONDS);
		}

	}

	/** A backend named {@code locks-only}, in memory, that cannot list or release the locks of others. */
	static LockBackend locksOnly() {
		InMemoryLockBackend memory = new InMemoryLockBackend();
		return new LockBackend() {

			@Override
			public String name() {
				return "locks-only";
			}

			@Override
			public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
				return memory.tryAcquire(key, owner, ttl);
			}

			@Override
			public boolean release(String key, String owner) {
				return memory.release(key, owner);
			}

		};
	}

}
