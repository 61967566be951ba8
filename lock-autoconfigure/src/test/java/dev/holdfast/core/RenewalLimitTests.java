package dev.holdfast.core;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.LockOptions;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A lease whose renewals end at a limit ({@link EngineLease#renewAtMostFor}, a scheduled run's
 * lockAtMostFor): renewed as any lease until the last renewal asks for what is left to the limit,
 * then never again; the lock expires on the backend at the limit, and the lease turns invalid.
 */
class RenewalLimitTests {

	private static final Duration LEASE_TIME = Duration.ofMillis(300);

	private static final Duration LIMIT = Duration.ofMillis(1000);

	private final InMemoryLockBackend memory = new InMemoryLockBackend();

	private final RecordingBackend backend = new RecordingBackend(this.memory);

	private final DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults());

	@AfterEach
	void close() {
		this.template.close();
	}

	@Test
	void renewalsEndAtTheLimitTheLastAskingForWhatIsLeft() {
		// warm the engine up, so that the acquisition below is sent right after sent is read
		this.template.acquire("warm-up", null, LockOptions.defaults()).close();
		long sent = System.nanoTime();
		EngineLease lease = (EngineLease) this.template.acquireOrNull("limited-" + UUID.randomUUID(), null,
				LockOptions.defaults().leaseTime(LEASE_TIME));
		lease.renewAtMostFor(LIMIT);
		await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(5)).until(() -> !lease.isValid());
		long invalidAfter = System.nanoTime() - sent;
		assertThat(Duration.ofNanos(invalidAfter)).as("valid until the limit, renewed past three lease times")
			.isBetween(Duration.ofMillis(800), Duration.ofMillis(1300));
		List<Renewal> renewals = List.copyOf(this.backend.renewals);
		assertThat(renewals).as("renewals").hasSizeBetween(2, 8);
		for (Renewal renewal : renewals) {
			assertThat(renewal.ttl()).as("time to live asked for").isLessThanOrEqualTo(LEASE_TIME);
			assertThat(renewal.sentNanos() - sent + renewal.ttl().toNanos())
				.as("end of a renewal's time to live, from the acquisition, ns")
				.isLessThanOrEqualTo(LIMIT.plusMillis(20).toNanos());
		}
		// What was left is under the lease time; rounded up to whole ms it may equal it.
		assertThat(renewals.get(renewals.size() - 1).ttl()).as("the last renewal: what was left")
			.isLessThanOrEqualTo(LEASE_TIME);
		// The lease turns invalid here a drift allowance before the backend lets the lock go: probe
		// once the limit itself has passed (plus the renewals' 20 ms slack above).
		long untilLimit = sent + LIMIT.plusMillis(20).toNanos() - System.nanoTime();
		await().pollDelay(Duration.ofNanos(Math.max(1, untilLimit))).until(() -> true);
		AcquireResult probe = this.memory.tryAcquire(lease.key(), "probe", Duration.ofMillis(100));
		assertThat(probe.acquired()).as("another owner, once the limit passed").isTrue();
		int count = this.backend.renewals.size();
		await().pollDelay(Duration.ofMillis(500)).until(() -> true);
		assertThat(this.backend.renewals).as("renewals after the limit").hasSize(count);
	}

	record Renewal(long sentNanos, Duration ttl) {
	}

	/** Records each renewal's time to live and when it was sent. */
	record RecordingBackend(LockBackend backend, List<Renewal> renewals) implements LockBackend, LeaseRenewal {

		RecordingBackend(LockBackend backend) {
			this(backend, new CopyOnWriteArrayList<>());
		}

		@Override
		public String name() {
			return this.backend.name();
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			return this.backend.tryAcquire(key, owner, ttl);
		}

		@Override
		public boolean release(String key, String owner) {
			return this.backend.release(key, owner);
		}

		@Override
		public Set<String> renew(Collection<HeldLock> locks) {
			long now = System.nanoTime();
			for (HeldLock lock : locks) {
				this.renewals.add(new Renewal(now, lock.ttl()));
			}
			return ((LeaseRenewal) this.backend).renew(locks);
		}

		@Override
		public Duration clockDriftAllowance(Duration ttl) {
			return this.backend.clockDriftAllowance(ttl);
		}

	}

}
