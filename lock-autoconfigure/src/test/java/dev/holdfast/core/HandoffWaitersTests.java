package dev.holdfast.core;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;

import org.junit.jupiter.api.Test;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.WaiterHandoff;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The engine's waiter states against a backend that only records what it is asked: who is woken
 * by a grant, and when a withdrawal is sent.
 */
class HandoffWaitersTests {

	private static final Duration TTL = Duration.ofSeconds(30);

	private final List<String> withdrawn = new CopyOnWriteArrayList<>();

	private final Set<String> held = ConcurrentHashMap.newKeySet();

	private final OwnerTokens owners = new OwnerTokens();

	private final HandoffWaiters waiters = new HandoffWaiters(new RecordingBackend(), this.owners,
			Duration.ofMillis(500));

	@Test
	void aSecondGrantCopyAfterManyOtherTakesNeverWithdrawsAHolderNotYetRegistered() {
		HandoffWaiters.Waiter waiter = this.waiters.register("k", TTL, () -> {
		});
		this.waiters.onGrant("k", waiter.owner, 42);
		assertThat(waiter.takeGranted()).isTrue();
		// Not yet registered as held (the racer between takeGranted and register), while 64 other
		// waiting acquisitions of this template take their locks.
		for (int i = 0; i < 64; i++) {
			this.waiters.register("other" + i, TTL, () -> {
			}).took();
		}
		// The second copy of the grant (answer vs announcement) arrives now.
		this.waiters.onGrant("k", waiter.owner, 42);
		assertThat(this.withdrawn).as("withdraws a lock its owner is returning").isEmpty();
	}

	@Test
	void aGrantWakesItsWaiterOnce() {
		AtomicInteger woken = new AtomicInteger();
		HandoffWaiters.Waiter waiter = this.waiters.register("k", TTL, woken::incrementAndGet);
		this.waiters.onGrant("k", waiter.owner, 7);
		assertThat(woken).hasValue(1);
		waiter.took();
		waiter.gaveUp();
		assertThat(this.withdrawn).as("a waiter that took the lock never withdraws").isEmpty();
		assertThat(this.waiters.size()).isZero();
	}

	@Test
	void aGrantWithATokenMakesTheWaiterTheHolderWithoutAnAttemptAndItsLeaseStartsBeforeTheGrant() {
		AtomicInteger woken = new AtomicInteger();
		HandoffWaiters.Waiter waiter = this.waiters.register("k", TTL, woken::incrementAndGet);
		long sent = System.nanoTime();
		waiter.attempt(sent + TTL.toNanos());
		waiter.refused(sent);
		assertThat(waiter.takeGranted()).as("no grant yet").isFalse();
		this.waiters.onGrant("k", waiter.owner, 42);
		this.waiters.onGrant("k", waiter.owner, 42);
		assertThat(woken).as("the second copy wakes nobody").hasValue(1);
		assertThat(waiter.takeGranted()).isTrue();
		assertThat(waiter.fencingToken()).isEqualTo(42);
		assertThat(waiter.leaseFrom()).isEqualTo(sent);
		assertThat(waiter.took()).as("an attempt's answer after the grant is the same lock")
			.isEqualTo(HandoffWaiters.Took.BY_GRANT);
		this.waiters.onGrant("k", waiter.owner, 42);
		waiter.gaveUp();
		assertThat(this.withdrawn).as("a waiter that took the lock by its grant never withdraws").isEmpty();
		assertThat(this.waiters.size()).isZero();
	}

	@Test
	void aGrantWhoseLeaseStartIsTooOldIsLeftToTheNextAttempt() {
		long created = System.nanoTime();
		HandoffWaiters.Waiter waiter = this.waiters.register("k", Duration.ofMillis(30), () -> {
		});
		// Refused long ago: its last refusal was its first attempt, at its creation.
		org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5))
			.until(() -> System.nanoTime() - created > Duration.ofMillis(20).toNanos());
		this.waiters.onGrant("k", waiter.owner, 42);
		assertThat(waiter.takeGranted()).as("started more than a third of the lease time ago").isFalse();
		assertThat(waiter.took()).as("the idempotent attempt takes it").isEqualTo(HandoffWaiters.Took.NOW);
		waiter.gaveUp();
		assertThat(this.withdrawn).isEmpty();
	}

	@Test
	void aGrantAndAGiveUpThatCrossEitherReturnTheLockOrHandItOnNeverBoth() throws Exception {
		for (int i = 0; i < 2_000; i++) {
			this.withdrawn.clear();
			HandoffWaiters.Waiter waiter = this.waiters.register("k", TTL, () -> {
			});
			waiter.refused(System.nanoTime());
			CyclicBarrier start = new CyclicBarrier(2);
			Thread grant = new Thread(() -> {
				await(start);
				this.waiters.onGrant("k", waiter.owner, 42);
			});
			grant.start();
			await(start);
			// The racer as its wait runs out: takes a grant that came first, else gives up.
			boolean took = waiter.takeGranted();
			if (!took) {
				waiter.gaveUp();
			}
			grant.join();
			boolean tookLate = waiter.takeGranted();
			assertThat(tookLate).as("round " + i + ": nothing to take after giving up").isFalse();
			long withdrawals = this.withdrawn.stream().filter(("k " + waiter.owner)::equals).count();
			if (took) {
				assertThat(withdrawals).as("round " + i + ": returned, so never withdrawn").isZero();
			}
			else {
				assertThat(withdrawals).as("round " + i + ": gone, so the handed lock is withdrawn").isBetween(1L, 2L);
			}
			assertThat(this.waiters.size()).as("round " + i).isZero();
		}
	}

	@Test
	void aWaiterThatGivesUpWithdrawsOnceAndAGrantForItIsHandedOn() {
		HandoffWaiters.Waiter waiter = this.waiters.register("k", TTL, () -> {
		});
		waiter.gaveUp();
		waiter.gaveUp();
		assertThat(this.withdrawn).containsExactly("k " + waiter.owner);
		// Drawn by a release after its withdrawal ran (a successor's release sent late): gone, so
		// the lock is nobody's.
		this.waiters.onGrant("k", waiter.owner, 7);
		assertThat(this.withdrawn).containsExactly("k " + waiter.owner, "k " + waiter.owner);
		assertThat(this.waiters.size()).isZero();
	}

	@Test
	void aGrantedWaiterThatGivesUpWithdrawsSoThatTheReservationIsHandedOn() {
		HandoffWaiters.Waiter waiter = this.waiters.register("k", TTL, () -> {
		});
		this.waiters.onGrant("k", waiter.owner, 7);
		waiter.gaveUp();
		assertThat(this.withdrawn).containsExactly("k " + waiter.owner);
	}

	@Test
	void aLateGrantForAnOwnerThatTookTheLockWithdrawsNothing() {
		HandoffWaiters.Waiter held = this.waiters.register("k", TTL, () -> {
		});
		held.took();
		this.held.add(held.owner);
		this.waiters.onGrant("k", held.owner, 7);
		HandoffWaiters.Waiter released = this.waiters.register("k", TTL, () -> {
		});
		released.took();
		// Taken and already released: one of the last owners that took their lock.
		this.waiters.onGrant("k", released.owner, 7);
		assertThat(this.withdrawn).isEmpty();
	}

	@Test
	void aGrantForAnotherProcesssWaiterOrAnUnknownOwnerOfOursIsIgnored() {
		this.waiters.onGrant("k", "elsewhere.1", 7);
		assertThat(this.withdrawn).isEmpty();
		// Perhaps one that took the lock and has not registered its lease yet: never withdrawn.
		String unknown = this.owners.next();
		this.waiters.onGrant("k", unknown, 7);
		this.waiters.onGrant("k", unknown, 0);
		assertThat(this.withdrawn).isEmpty();
	}

	@Test
	void aSuccessorIsAdoptedByTheNextRacerAndAGrantBeforeThatWakesItOnAdoption() {
		this.waiters.successor("k", TTL);
		String successor = this.waiters.localWaiter("k", System.nanoTime() + TTL.toNanos()).owner;
		assertThat(successor).isNotNull();
		this.waiters.onGrant("k", successor, 7);
		AtomicInteger woken = new AtomicInteger();
		HandoffWaiters.Waiter racer = this.waiters.adopt("k", TTL, woken::incrementAndGet);
		assertThat(racer.owner).isEqualTo(successor);
		assertThat(woken).as("granted before it was adopted").hasValue(1);
		racer.took();
		assertThat(this.waiters.localWaiter("k", System.nanoTime() + TTL.toNanos())).isNull();
		this.waiters.queueEmptied("k");
		assertThat(this.withdrawn).isEmpty();
		assertThat(this.waiters.size()).isZero();
	}

	@Test
	void aSuccessorNobodyAdoptsIsWithdrawnWhenTheQueueEmpties() {
		this.waiters.successor("k", TTL);
		String successor = this.waiters.localWaiter("k", System.nanoTime() + TTL.toNanos()).owner;
		this.waiters.queueEmptied("k");
		assertThat(this.withdrawn).containsExactly("k " + successor);
		assertThat(this.waiters.localWaiter("k", System.nanoTime() + TTL.toNanos())).isNull();
		assertThat(this.waiters.size()).isZero();
	}

	@Test
	void aSuccessorIsEitherAdoptedOrWithdrawnNeverBoth() throws Exception {
		for (int i = 0; i < 2_000; i++) {
			this.withdrawn.clear();
			this.waiters.successor("k", TTL);
			String successor = this.waiters.localWaiter("k", System.nanoTime() + TTL.toNanos()).owner;
			CyclicBarrier start = new CyclicBarrier(2);
			AtomicBoolean adopted = new AtomicBoolean();
			Thread racer = new Thread(() -> {
				await(start);
				HandoffWaiters.Waiter waiter = this.waiters.adopt("k", TTL, () -> {
				});
				adopted.set(waiter.owner.equals(successor));
				waiter.gaveUp();
			});
			racer.start();
			await(start);
			this.waiters.queueEmptied("k");
			racer.join();
			long withdrawalsOfSuccessor = this.withdrawn.stream().filter(("k " + successor)::equals).count();
			assertThat(withdrawalsOfSuccessor).as("round " + i).isEqualTo(1);
			assertThat(this.waiters.size()).as("round " + i).isZero();
			assertThat(this.waiters.localWaiter("k", System.nanoTime() + TTL.toNanos())).isNull();
			if (adopted.get()) {
				// The racer adopted it and withdrew it when it gave up; the queue's end did nothing.
				assertThat(this.withdrawn).hasSize(1);
			}
		}
	}

	private static void await(CyclicBarrier barrier) {
		try {
			barrier.await();
		}
		catch (Exception ex) {
			throw new IllegalStateException(ex);
		}
	}

	private final class RecordingBackend implements WaiterHandoff {

		@Override
		public AcquireResult tryAcquireWaiting(String key, String owner, Duration ttl, Duration recordFor) {
			return AcquireResult.held(-1);
		}

		@Override
		public boolean release(String key, String owner, String localWaiter, Duration localWaiterTtl,
				Duration recordFor) {
			return true;
		}

		@Override
		public void withdraw(String key, String owner) {
			HandoffWaitersTests.this.withdrawn.add(key + " " + owner);
		}

		@Override
		public AutoCloseable subscribe(Consumer<String> released, Grants granted) {
			return () -> {
			};
		}

		@Override
		public AutoCloseable subscribe(Consumer<String> listener) {
			return () -> {
			};
		}

	}

}
