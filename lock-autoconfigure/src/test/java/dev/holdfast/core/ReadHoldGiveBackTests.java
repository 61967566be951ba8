package dev.holdfast.core;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockListener;
import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.core.ReadWriteLockTests.Counting;
import dev.holdfast.core.ReadWriteLockTests.Pause;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.SessionLeases;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * When a join's owner is given back (RWL-18) after its read lease L ended: at once if L was lost
 * and not released, never before L's release when that is not sent yet. The interleavings where L
 * is releasing: {@link ReadWriteLockTests}.
 */
class ReadHoldGiveBackTests {

	private static final LockOptions READ = LockOptions.defaults().mode(LockMode.READ).waitTime(Duration.ZERO);

	private final Checking backend = new Checking();

	private final List<String> events = new CopyOnWriteArrayList<>();

	private final DefaultLockTemplate template = new DefaultLockTemplate(this.backend, LockSettings.defaults(),
			new LockListener() {

				@Override
				public void leaseLost(String name, String backend) {
					ReadHoldGiveBackTests.this.events.add("lost " + name);
				}

			});

	private final String name = "rw-" + UUID.randomUUID();

	private final ExecutorService callers = Executors.newCachedThreadPool();

	@AfterEach
	void close() {
		this.callers.shutdownNow();
		this.template.close();
	}

	@Test
	void aJoinGrantedAfterItsLeaseWasLostGivesItsOwnerBackAtOnce() throws Exception {
		Lease first = this.template.acquire(this.name, null, READ);
		String owner = this.backend.sharedOwners.get(0);
		Pause join = this.backend.pauseNextShared(false);
		CompletableFuture<Lease> joiner = CompletableFuture
			.supplyAsync(() -> this.template.acquire(this.name, null, READ.waitTime(Duration.ofSeconds(5))), this.callers);
		join.reached();
		loseByARefusedRenewal(first);
		// granted with the lost lease's owner: its release waits for the first hold, which stays open
		join.go();
		Lease other = joiner.get(5, TimeUnit.SECONDS);
		await().atMost(Duration.ofSeconds(5)).until(() -> this.backend.releasesOf(owner).equals(List.of("released")));
		first.close();
		await().atMost(Duration.ofSeconds(5)).until(() -> this.template.releasesInFlight() == 0);
		assertThat(this.backend.releasesOf(owner)).containsExactly("released", "not held");
		assertThat(this.events).as("the loss reported once").containsExactly("lost " + this.name);
		assertThat(other.isValid()).isTrue();
		other.close();
	}

	@Test
	void aJoinGrantedBeforeItsLeaseReleaseIsSentLeavesItsOwnerToThatRelease() throws Exception {
		Lease first = this.template.acquire(this.name, null, READ);
		String owner = this.backend.sharedOwners.get(0);
		Pause join = this.backend.pauseNextShared(false);
		CompletableFuture<Optional<Lease>> joiner = CompletableFuture
			.supplyAsync(() -> this.template.tryAcquire(this.name, null, READ), this.callers);
		join.reached();
		Pause check = new Pause();
		CompletableFuture<Void> closing = CompletableFuture.runAsync(() -> {
			this.backend.pauseNextCheckHere(check);
			first.close();
		}, this.callers);
		// the last hold left; its release checks the lease, not begun yet
		check.reached();
		join.go();
		assertThat(joiner.get(5, TimeUnit.SECONDS)).as("a try-once join that did not enter").isEmpty();
		assertThat(this.backend.releasesOf(owner)).as("nothing given back before the lease's release").isEmpty();
		assertThat(this.template.releasesInFlight()).as("no give-back pending: the release follows the grant").isZero();
		check.go();
		closing.get(5, TimeUnit.SECONDS);
		await().atMost(Duration.ofSeconds(5)).until(() -> this.template.releasesInFlight() == 0);
		assertThat(this.backend.releasesOf(owner)).containsExactly("released");
		assertThat(this.events).as("no loss reported").isEmpty();
		assertThat(this.backend.tryAcquire(first.key(), "writer", Duration.ofSeconds(5)).acquired())
			.as("the owner's refreshed hold left with the lease's release")
			.isTrue();
	}

	@Test
	void aFailedJoinReleasesTheOwnerOfItsLostLeaseAtOnce() throws Exception {
		Lease first = this.template.acquire(this.name, null, READ);
		String owner = this.backend.sharedOwners.get(0);
		Pause join = this.backend.pauseNextShared(true);
		CompletableFuture<Lease> joiner = CompletableFuture
			.supplyAsync(() -> this.template.acquire(this.name, null, READ.waitTime(Duration.ofSeconds(5))), this.callers);
		join.reached();
		loseByARefusedRenewal(first);
		// the join's attempt is applied, then fails (its outcome unknown); the lease's hold stays open
		join.go();
		assertThat(joiner).failsWithin(Duration.ofSeconds(5))
			.withThrowableThat()
			.withCauseInstanceOf(LockBackendException.class);
		await().atMost(Duration.ofSeconds(5)).until(() -> this.backend.releasesOf(owner).equals(List.of("released")));
		first.close();
		await().atMost(Duration.ofSeconds(5)).until(() -> this.template.releasesInFlight() == 0);
		assertThat(this.backend.releasesOf(owner)).containsExactly("released", "not held");
		assertThat(this.events).as("the loss reported once").containsExactly("lost " + this.name);
	}

	/** The lease is lost (RWL-6) and its hold stays open: its release is not sent before it closes. */
	private void loseByARefusedRenewal(Lease lease) {
		this.backend.refuseRenewals = true;
		assertThat(lease.extend(Duration.ofSeconds(30))).isFalse();
		assertThat(this.events).containsExactly("lost " + this.name);
	}

	/**
	 * Counting memory that can refuse renewals, and pause a chosen thread where it next checks
	 * whether a lease can be trusted ({@link SessionLeases#suspended()}, never suspended): a
	 * release checks its lease after the last hold left, before it begins.
	 */
	static final class Checking extends Counting implements SessionLeases {

		volatile boolean refuseRenewals;

		private volatile @Nullable Thread checking;

		private volatile @Nullable Pause check;

		/** The calling thread's next check pauses at {@code pause}. */
		void pauseNextCheckHere(Pause pause) {
			this.check = pause;
			this.checking = Thread.currentThread();
		}

		@Override
		public boolean suspended() {
			Pause pause = this.check;
			if (Thread.currentThread() == this.checking && pause != null) {
				this.checking = null;
				pause.here();
			}
			return false;
		}

		@Override
		public AutoCloseable onLost(LostListener listener) {
			return () -> {
			};
		}

		@Override
		public Set<String> renewShared(Collection<HeldLock> holds) {
			return this.refuseRenewals ? Set.of() : super.renewShared(holds);
		}

	}

}
