package dev.holdfast.core;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.micrometer.observation.Observation;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockListener;
import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;

/** The engine's read-write rules (RWL-2 to RWL-10 in docs/DESIGN.md), on the in-memory backend. */
class ReadWriteLockTests {

	private static final LockOptions READ = LockOptions.defaults().mode(LockMode.READ).waitTime(Duration.ZERO);

	private final Counting backend = new Counting();

	private final List<String> events = new CopyOnWriteArrayList<>();

	private final DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults(),
			new LockListener() {

				@Override
				public LockObservation acquiringRead(String name, String key, String backend) {
					int reader = ReadWriteLockTests.this.readers.incrementAndGet();
					return new Recording("reader " + reader);
				}

				@Override
				public void leaseLost(String name, String backend) {
					ReadWriteLockTests.this.events.add("lost " + name);
				}

			});

	private final AtomicInteger readers = new AtomicInteger();

	private final String name = "rw-" + UUID.randomUUID();

	@AfterEach
	void close() {
		this.template.close();
	}

	@Test
	void localReadersShareOneReadLeaseReleasedByTheLastHold() throws Exception {
		Lease first = this.template.acquire(this.name, null, READ);
		Lease again = this.template.acquire(this.name, null, READ);
		assertThat(this.backend.sharedOwners).hasSize(1);
		Lease other = CompletableFuture.supplyAsync(() -> this.template.acquire(this.name, null, READ)).get();
		// the other thread sent the shared attempt, with the read lease's owner
		assertThat(this.backend.sharedOwners).hasSize(2);
		assertThat(Set.copyOf(this.backend.sharedOwners)).hasSize(1);
		assertThat(this.template.heldLeases()).hasSize(1);
		assertThat(other.fencingToken()).isEqualTo(first.fencingToken());
		again.close();
		first.close();
		assertThat(this.backend.releases.get()).isZero();
		assertThat(this.template.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ZERO)))
			.as("held by the other thread's read hold").isEmpty();
		CompletableFuture.runAsync(other::close).get();
		assertThat(this.backend.releases.get()).isOne();
		assertThat(this.template.heldLeases()).isEmpty();
		assertThat(this.template.tryAcquire(this.name, null, LockOptions.defaults().waitTime(Duration.ZERO)))
			.isPresent()
			.hasValueSatisfying(Lease::close);
	}

	@Test
	void aReadHoldIsNeverUpgradedAndTheWriteHolderReadsByReentry() {
		try (Lease read = this.template.acquire(this.name, null, READ)) {
			assertThatIllegalStateException()
				.isThrownBy(() -> this.template.acquire(this.name, null, LockOptions.defaults()))
				.withMessageContaining("RWL-4");
		}
		try (Lease write = this.template.acquire(this.name, null, LockOptions.defaults().waitTime(Duration.ZERO));
				Lease read = this.template.acquire(this.name, null, READ)) {
			assertThat(read.fencingToken()).isEqualTo(write.fencingToken());
			assertThat(this.backend.sharedOwners).hasSize(1);
		}
	}

	@Test
	void readLeasesAreRenewedWithRenewSharedAndExclusiveOnesWithRenew() throws Exception {
		LockOptions shortLease = LockOptions.defaults().leaseTime(Duration.ofMillis(300)).waitTime(Duration.ZERO);
		try (Lease read = this.template.acquire(this.name, null, shortLease.mode(LockMode.READ));
				Lease write = this.template.acquire(this.name, "other", shortLease)) {
			await().atMost(Duration.ofSeconds(5)).until(() -> this.backend.renewedShared.size() >= 3);
			assertThat(this.backend.renewedShared).containsOnly(read.key());
			assertThat(this.backend.renewedExclusive).contains(write.key()).doesNotContain(read.key());
			assertThat(read.isValid()).isTrue();
			assertThat(this.backend.tryAcquire(read.key(), "writer", Duration.ofSeconds(1)).acquired()).isFalse();
		}
	}

	@Test
	void aLostReadLeaseReachesEveryLocalReader() throws Exception {
		Lease first = this.template.acquire(this.name, null, READ);
		Lease other = CompletableFuture.supplyAsync(() -> this.template.acquire(this.name, null, READ)).get();
		assertThat(this.events).isEmpty();
		this.backend.forceRelease(first.key(), null);
		assertThat(first.extend(Duration.ofSeconds(30))).isFalse();
		assertThat(first.isValid()).isFalse();
		assertThat(other.isValid()).isFalse();
		assertThat(this.events).containsExactly("lost " + this.name);
		assertThat(Recording.ended).contains("reader 1 lost", "reader 2 lost");
		first.close();
		other.close();
	}

	@Test
	void readOnABackendWithoutSharedLocksFailsAtTheCallNamingTheBackendAndThePrimitive() {
		LockBackend plain = new LockBackend() {

			@Override
			public String name() {
				return "plain";
			}

			@Override
			public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
				return ReadWriteLockTests.this.backend.tryAcquire(key, owner, ttl);
			}

			@Override
			public boolean release(String key, String owner) {
				return ReadWriteLockTests.this.backend.release(key, owner);
			}

		};
		try (DefaultLockTemplate template = new DefaultLockTemplate(plain, LockSettings.defaults())) {
			assertThatExceptionOfType(UnsupportedOperationException.class)
				.isThrownBy(() -> template.acquire(this.name, null, READ))
				.withMessageContaining("plain backend")
				.withMessageContaining("SharedLocks");
		}
	}

	@Test
	void readIsRefusedWithoutBlockingForSeveralKeysAndForPermits() {
		assertThat(this.template.tryAcquireAsync(this.name, null, READ))
			.failsWithin(Duration.ofSeconds(1))
			.withThrowableThat()
			.withCauseInstanceOf(UnsupportedOperationException.class)
			.withMessageContaining("LockTemplate.acquire");
		assertThatExceptionOfType(UnsupportedOperationException.class)
			.isThrownBy(() -> this.template.acquireAll(this.name, List.of("a", "b"), READ))
			.withMessageContaining("READ");
		assertThatExceptionOfType(UnsupportedOperationException.class)
			.isThrownBy(() -> this.template.acquirePermit(this.name, null, 3, READ))
			.withMessageContaining("WRITE");
		assertThat(this.backend.sharedOwners).isEmpty();
	}

	/** Memory that counts the shared attempts, releases and renewals. */
	static final class Counting extends InMemoryLockBackend {

		final List<String> sharedOwners = new CopyOnWriteArrayList<>();

		final AtomicInteger releases = new AtomicInteger();

		final List<String> renewedShared = new CopyOnWriteArrayList<>();

		final List<String> renewedExclusive = new CopyOnWriteArrayList<>();

		@Override
		public AcquireResult tryAcquireShared(String key, String owner, Duration ttl, Duration recordFor) {
			this.sharedOwners.add(owner);
			return super.tryAcquireShared(key, owner, ttl, recordFor);
		}

		@Override
		public boolean release(String key, String owner) {
			this.releases.incrementAndGet();
			return super.release(key, owner);
		}

		@Override
		public Set<String> renewShared(Collection<HeldLock> holds) {
			holds.forEach((hold) -> this.renewedShared.add(hold.key()));
			return super.renewShared(holds);
		}

		@Override
		public Set<String> renew(Collection<HeldLock> held) {
			held.forEach((hold) -> this.renewedExclusive.add(hold.key()));
			return super.renew(held);
		}

	}

	/** Records how each reader's hold ended. */
	record Recording(String reader) implements LockListener.LockObservation {

		static final List<String> ended = new CopyOnWriteArrayList<>();

		@Override
		public void acquired(long fencingToken) {
		}

		@Override
		public void notAcquired() {
		}

		@Override
		public void failed(Throwable ex) {
		}

		@Override
		public void cancelled() {
		}

		@Override
		public void released() {
			ended.add(this.reader + " released");
		}

		@Override
		public void lost() {
			ended.add(this.reader + " lost");
		}

		@Override
		public Observation hold() {
			return Observation.NOOP;
		}

		@Override
		public Observation.Scope openScope() {
			return Observation.Scope.NOOP;
		}

	}

}
