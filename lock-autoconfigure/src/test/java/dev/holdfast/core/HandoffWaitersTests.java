package dev.holdfast.core;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
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
		waiter.refused(sent, System.nanoTime());
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
	void aRefusalAnsweredALeaseTimeAfterTheLeaseStartMovesNothingSoAStaleGrantHeardThenIsLeftToTheNextAttempt() {
		Duration ttl = Duration.ofMillis(300);
		HandoffWaiters.Waiter waiter = this.waiters.register("k", ttl, () -> {
		});
		long first = System.nanoTime();
		waiter.refused(first, System.nanoTime());
		assertThat(waiter.leaseFrom()).as("answered promptly").isEqualTo(first);
		// Now a release hands the key to the waiter (PX = ttl), and its grant is delayed (the
		// listening thread stalls); the handed lock expires unused and another owner takes the key.
		org.awaitility.Awaitility.await()
			.atMost(Duration.ofSeconds(5))
			.pollInterval(Duration.ofMillis(5))
			.until(() -> System.nanoTime() - first > ttl.toNanos());
		// The waiter's next poll finds the other owner's lock: refused, answered a lease time after
		// the lease start, so it may have run after a handed lock expired.
		long late = System.nanoTime();
		waiter.refused(late, System.nanoTime());
		assertThat(waiter.leaseFrom()).as("a refusal answered a lease time after the start moves nothing")
			.isEqualTo(first);
		// The stale grant arrives, within a third of the lease time of that refusal.
		this.waiters.onGrant("k", waiter.owner, 42);
		assertThat(waiter.takeGranted()).as("the stale grant is not trusted").isFalse();
		assertThat(waiter.took()).as("the next attempt decides (idempotent if the key is the waiter's)")
			.isEqualTo(HandoffWaiters.Took.NOW);
		assertThat(this.withdrawn).isEmpty();
		assertThat(this.waiters.size()).isZero();
	}

	@Test
	void refusalsAnsweredPromptlyKeepMovingTheLeaseStartAndTheGrantIsTaken() {
		Duration ttl = Duration.ofMillis(600);
		HandoffWaiters.Waiter waiter = this.waiters.register("k", ttl, () -> {
		});
		long created = System.nanoTime();
		AtomicLong lastSent = new AtomicLong();
		// Polls answered promptly, each within a lease time of the start before it, for more than a
		// lease time in all.
		org.awaitility.Awaitility.await()
			.atMost(Duration.ofSeconds(10))
			.pollInterval(Duration.ofMillis(20))
			.until(() -> {
				long sent = System.nanoTime();
				waiter.refused(sent, System.nanoTime());
				lastSent.set(sent);
				return sent - created > ttl.toNanos() + Duration.ofMillis(100).toNanos();
			});
		assertThat(waiter.leaseFrom()).as("the latest prompt refusal starts the lease").isEqualTo(lastSent.get());
		this.waiters.onGrant("k", waiter.owner, 42);
		assertThat(waiter.takeGranted()).isTrue();
		assertThat(waiter.fencingToken()).isEqualTo(42);
		assertThat(waiter.leaseFrom()).isEqualTo(lastSent.get());
		assertThat(this.waiters.size()).isZero();
	}

	@Test
	void aReleaseRecordingASuccessorALeaseTimeAfterItsLeaseStartMovesNothing() {
		Duration ttl = Duration.ofMillis(300);
		this.waiters.successor("k", ttl);
		HandoffWaiters.Waiter successor = this.waiters.localWaiter("k", System.nanoTime() + TTL.toNanos());
		long recorded = successor.leaseFrom();
		// That release drew someone else; the next one records the successor a lease time later
		// (a lock handed to it by a release in between would have expired unused by then).
		org.awaitility.Awaitility.await()
			.atMost(Duration.ofSeconds(5))
			.pollInterval(Duration.ofMillis(5))
			.until(() -> System.nanoTime() - recorded > ttl.toNanos());
		assertThat(this.waiters.localWaiter("k", System.nanoTime() + TTL.toNanos())).isSameAs(successor);
		assertThat(successor.leaseFrom()).as("recorded a lease time after its lease start").isEqualTo(recorded);
		this.waiters.onGrant("k", successor.owner, 42);
		HandoffWaiters.Waiter racer = this.waiters.adopt("k", ttl, () -> {
		});
		assertThat(racer).isSameAs(successor);
		assertThat(racer.takeGranted()).as("a grant heard now is not trusted").isFalse();
		assertThat(racer.took()).isEqualTo(HandoffWaiters.Took.NOW);
		this.waiters.queueEmptied("k");
		assertThat(this.withdrawn).isEmpty();
		assertThat(this.waiters.size()).isZero();
	}

	@Test
	void aGrantAndAGiveUpThatCrossEitherReturnTheLockOrHandItOnNeverBoth() throws Exception {
		for (int i = 0; i < 2_000; i++) {
			this.withdrawn.clear();
			HandoffWaiters.Waiter waiter = this.waiters.register("k", TTL, () -> {
			});
			waiter.refused(System.nanoTime(), System.nanoTime());
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
