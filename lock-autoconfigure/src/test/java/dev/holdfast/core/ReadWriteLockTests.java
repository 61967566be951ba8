package dev.holdfast.core;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.micrometer.observation.Observation;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
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

	private final ExecutorService callers = Executors.newCachedThreadPool();

	@AfterEach
	void close() {
		this.callers.shutdownNow();
		this.template.close();
		Recording.ended.clear();
	}

	@Test
	void aJoinAfterAForcedReleaseAndAWriteLosesTheOldLease() throws Exception {
		Lease first = this.template.acquire(this.name, null, READ);
		this.backend.forceRelease(first.key(), null);
		assertThat(this.backend.tryAcquire(first.key(), "writer", Duration.ofSeconds(5)).acquired()).isTrue();
		assertThat(this.backend.release(first.key(), "writer")).isTrue();
		// another thread of this template reads while the first lease still looks valid here: its join
		// finds a new group, and it retries with a new owner within its wait (a try-once reader would not)
		Lease other = CompletableFuture
			.supplyAsync(() -> this.template.acquire(this.name, null, READ.waitTime(Duration.ofSeconds(5))))
			.get();
		assertThat(other).isNotNull();
		assertThat(first.isValid()).as("the first reader read beside the write").isFalse();
		assertThat(this.events).containsExactly("lost " + this.name);
		assertThat(Recording.ended).containsExactly("reader 1 lost");
		assertThat(other.isValid()).isTrue();
		assertThat(other.fencingToken()).isGreaterThan(first.fencingToken());
		first.close();
		assertThat(this.backend.tryAcquire(first.key(), "writer", Duration.ofSeconds(5)).acquired())
			.as("the new lease still holds").isFalse();
		other.close();
		await().atMost(Duration.ofSeconds(5))
			.until(() -> this.backend.tryAcquire(first.key(), "writer", Duration.ofSeconds(5)).acquired());
	}

	@Test
	void aJoiningReaderThatRenewsKeepsTheLeaseAfterTheFirstCloses() throws Exception {
		LockOptions shortLease = READ.leaseTime(Duration.ofMillis(600));
		Lease first = this.template.acquire(this.name, null, shortLease.renew(false));
		Lease other = CompletableFuture.supplyAsync(() -> this.template.acquire(this.name, null, shortLease.renew(true)))
			.get();
		first.close();
		await().during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(3)).until(other::isValid);
		assertThat(this.backend.tryAcquire(other.key(), "writer", Duration.ofSeconds(5)).acquired()).isFalse();
		assertThat(this.events).isEmpty();
		other.close();
	}

	@Test
	void aJoinNeverAsksAShorterTtlForTheOwner() throws Exception {
		Lease first = this.template.acquire(this.name, null, READ.leaseTime(Duration.ofSeconds(30)));
		Lease other = CompletableFuture
			.supplyAsync(() -> this.template.acquire(this.name, null, READ.leaseTime(Duration.ofSeconds(1))))
			.get();
		assertThat(this.backend.sharedTtls).containsExactly(Duration.ofSeconds(30), Duration.ofSeconds(30));
		assertThat(first.extend(Duration.ofSeconds(2))).isTrue();
		assertThat(other.isValid()).isTrue();
		assertThat(first.expiresAt()).isAfter(java.time.Instant.now().plusSeconds(20));
		other.close();
		first.close();
	}

	@Test
	void aJoinGrantedWhileTheLeaseIsReleasingGivesItsOwnerBackOnlyAfterThatReleaseAnswered() throws Exception {
		Lease first = this.template.acquire(this.name, null, READ);
		String owner = this.backend.sharedOwners.get(0);
		Pause join = this.backend.pauseNextShared(false);
		CompletableFuture<Lease> joiner = CompletableFuture
			.supplyAsync(() -> this.template.acquire(this.name, null, READ.waitTime(Duration.ofSeconds(5))), this.callers);
		join.reached();
		Pause release = this.backend.pauseNextRelease();
		CompletableFuture<Void> closing = CompletableFuture.runAsync(first::close, this.callers);
		release.reached();
		// the join is granted with the lease's owner while the lease's release is in flight (RWL-18)
		join.go();
		Lease other = joiner.get(5, TimeUnit.SECONDS);
		assertThat(this.backend.releasesOf(owner)).as("nothing given back before the lease's release answered").isEmpty();
		release.go();
		closing.get(5, TimeUnit.SECONDS);
		await().atMost(Duration.ofSeconds(5)).until(() -> this.template.releasesInFlight() == 0);
		assertThat(this.backend.releasesOf(owner)).containsExactly("released", "not held");
		assertThat(this.events).as("no loss reported").isEmpty();
		other.close();
	}

	@Test
	void aFailedJoinReleasesTheOwnerOfItsEndedLeaseOnlyAfterThatLeaseReleaseAnswered() throws Exception {
		Lease first = this.template.acquire(this.name, null, READ);
		String owner = this.backend.sharedOwners.get(0);
		Pause join = this.backend.pauseNextShared(true);
		CompletableFuture<Lease> joiner = CompletableFuture
			.supplyAsync(() -> this.template.acquire(this.name, null, READ.waitTime(Duration.ofSeconds(5))), this.callers);
		join.reached();
		Pause release = this.backend.pauseNextRelease();
		CompletableFuture<Void> closing = CompletableFuture.runAsync(first::close, this.callers);
		release.reached();
		// the join's attempt is applied, then fails (its outcome unknown) after the lease ended
		join.go();
		assertThat(joiner).failsWithin(Duration.ofSeconds(5))
			.withThrowableThat()
			.withCauseInstanceOf(LockBackendException.class);
		assertThat(this.backend.releasesOf(owner)).as("nothing released before the lease's release answered").isEmpty();
		release.go();
		closing.get(5, TimeUnit.SECONDS);
		await().atMost(Duration.ofSeconds(5)).until(() -> this.backend.releasesOf(owner).size() >= 2);
		assertThat(this.backend.releasesOf(owner)).startsWith("released", "not held");
		assertThat(this.events).as("no loss reported").isEmpty();
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
		assertThat(Recording.ended).containsExactlyInAnyOrder("reader 1 lost", "reader 2 lost");
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
	static class Counting extends InMemoryLockBackend {

		final List<String> sharedOwners = new CopyOnWriteArrayList<>();

		final AtomicInteger releases = new AtomicInteger();

		final List<Duration> sharedTtls = new CopyOnWriteArrayList<>();

		final List<String> renewedShared = new CopyOnWriteArrayList<>();

		final List<String> renewedExclusive = new CopyOnWriteArrayList<>();

		/** Each release's owner and answer, {@code <owner> released} or {@code <owner> not held}. */
		final List<String> released = new CopyOnWriteArrayList<>();

		private final AtomicReference<Pause> sharedPause = new AtomicReference<>();

		private final AtomicReference<Pause> releasePause = new AtomicReference<>();

		private volatile boolean failPausedShared;

		/** Pauses the next shared attempt before it is applied; {@code fail}: it throws once applied. */
		Pause pauseNextShared(boolean fail) {
			this.failPausedShared = fail;
			Pause pause = new Pause();
			this.sharedPause.set(pause);
			return pause;
		}

		/** Pauses the next release before it is applied: in flight until {@link Pause#go}. */
		Pause pauseNextRelease() {
			Pause pause = new Pause();
			this.releasePause.set(pause);
			return pause;
		}

		/** The answers to {@code owner}'s releases, in order. */
		List<String> releasesOf(String owner) {
			return this.released.stream()
				.filter((release) -> release.startsWith(owner + " "))
				.map((release) -> release.substring(owner.length() + 1))
				.toList();
		}

		@Override
		public AcquireResult tryAcquireShared(String key, String owner, Duration ttl, Duration recordFor) {
			this.sharedOwners.add(owner);
			this.sharedTtls.add(ttl);
			Pause pause = this.sharedPause.getAndSet(null);
			if (pause != null) {
				pause.here();
			}
			AcquireResult result = super.tryAcquireShared(key, owner, ttl, recordFor);
			if (pause != null && this.failPausedShared) {
				throw new LockBackendException("timed out after the backend applied it", null);
			}
			return result;
		}

		@Override
		public boolean release(String key, String owner) {
			this.releases.incrementAndGet();
			Pause pause = this.releasePause.getAndSet(null);
			if (pause != null) {
				pause.here();
			}
			boolean released = super.release(key, owner);
			this.released.add(owner + (released ? " released" : " not held"));
			return released;
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

	/** A backend call held where it reached the backend until the test lets it go on. */
	static final class Pause {

		private final CountDownLatch reached = new CountDownLatch(1);

		private final CountDownLatch go = new CountDownLatch(1);

		void here() {
			this.reached.countDown();
			try {
				assertThat(this.go.await(10, TimeUnit.SECONDS)).as("the test let the call go on").isTrue();
			}
			catch (InterruptedException ex) {
				Thread.currentThread().interrupt();
			}
		}

		void reached() throws InterruptedException {
			assertThat(this.reached.await(10, TimeUnit.SECONDS)).as("the call reached the backend").isTrue();
		}

		void go() {
			this.go.countDown();
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
