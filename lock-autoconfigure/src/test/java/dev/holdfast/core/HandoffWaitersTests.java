package dev.holdfast.core;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
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

	private final List<String> withdrawn = new CopyOnWriteArrayList<>();

	private final Set<String> held = ConcurrentHashMap.newKeySet();

	private final OwnerTokens owners = new OwnerTokens();

	private final HandoffWaiters waiters = new HandoffWaiters(new RecordingBackend(), this.owners,
			Duration.ofMillis(500), (key, owner) -> this.held.contains(owner));

	@Test
	void aGrantWakesItsWaiterOnce() {
		AtomicInteger woken = new AtomicInteger();
		HandoffWaiters.Waiter waiter = this.waiters.register("k", woken::incrementAndGet);
		this.waiters.onGrant("k", waiter.owner);
		assertThat(woken).hasValue(1);
		waiter.took();
		waiter.gaveUp();
		assertThat(this.withdrawn).as("a waiter that took the lock never withdraws").isEmpty();
		assertThat(this.waiters.size()).isZero();
	}

	@Test
	void aWaiterThatGivesUpWithdrawsOnceAndAGrantForItIsHandedOn() {
		HandoffWaiters.Waiter waiter = this.waiters.register("k", () -> {
		});
		waiter.gaveUp();
		waiter.gaveUp();
		assertThat(this.withdrawn).containsExactly("k " + waiter.owner);
		this.waiters.onGrant("k", waiter.owner);
		assertThat(this.withdrawn).containsExactly("k " + waiter.owner, "k " + waiter.owner);
		assertThat(this.waiters.size()).isZero();
	}

	@Test
	void aGrantedWaiterThatGivesUpWithdrawsSoThatTheReservationIsHandedOn() {
		HandoffWaiters.Waiter waiter = this.waiters.register("k", () -> {
		});
		this.waiters.onGrant("k", waiter.owner);
		waiter.gaveUp();
		assertThat(this.withdrawn).containsExactly("k " + waiter.owner);
	}

	@Test
	void aLateGrantForAnOwnerThatTookTheLockWithdrawsNothing() {
		HandoffWaiters.Waiter held = this.waiters.register("k", () -> {
		});
		held.took();
		this.held.add(held.owner);
		this.waiters.onGrant("k", held.owner);
		HandoffWaiters.Waiter released = this.waiters.register("k", () -> {
		});
		released.took();
		// Taken and already released: one of the last owners that took their lock.
		this.waiters.onGrant("k", released.owner);
		assertThat(this.withdrawn).isEmpty();
	}

	@Test
	void aGrantForAnotherProcesssWaiterIsIgnoredAndOneForAnUnknownOwnerOfOursIsHandedOn() {
		this.waiters.onGrant("k", "elsewhere.1");
		assertThat(this.withdrawn).isEmpty();
		String unknown = this.owners.next();
		this.waiters.onGrant("k", unknown);
		assertThat(this.withdrawn).containsExactly("k " + unknown);
	}

	@Test
	void aSuccessorIsAdoptedByTheNextRacerAndAGrantBeforeThatWakesItOnAdoption() {
		this.waiters.successor("k");
		String successor = this.waiters.localWaiter("k");
		assertThat(successor).isNotNull();
		this.waiters.onGrant("k", successor);
		AtomicInteger woken = new AtomicInteger();
		HandoffWaiters.Waiter racer = this.waiters.adopt("k", woken::incrementAndGet);
		assertThat(racer.owner).isEqualTo(successor);
		assertThat(woken).as("granted before it was adopted").hasValue(1);
		racer.took();
		assertThat(this.waiters.localWaiter("k")).isNull();
		this.waiters.queueEmptied("k");
		assertThat(this.withdrawn).isEmpty();
		assertThat(this.waiters.size()).isZero();
	}

	@Test
	void aSuccessorNobodyAdoptsIsWithdrawnWhenTheQueueEmpties() {
		this.waiters.successor("k");
		String successor = this.waiters.localWaiter("k");
		this.waiters.queueEmptied("k");
		assertThat(this.withdrawn).containsExactly("k " + successor);
		assertThat(this.waiters.localWaiter("k")).isNull();
		assertThat(this.waiters.size()).isZero();
	}

	@Test
	void aSuccessorIsEitherAdoptedOrWithdrawnNeverBoth() throws Exception {
		for (int i = 0; i < 2_000; i++) {
			this.withdrawn.clear();
			this.waiters.successor("k");
			String successor = this.waiters.localWaiter("k");
			CyclicBarrier start = new CyclicBarrier(2);
			AtomicBoolean adopted = new AtomicBoolean();
			Thread racer = new Thread(() -> {
				await(start);
				HandoffWaiters.Waiter waiter = this.waiters.adopt("k", () -> {
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
			assertThat(this.waiters.localWaiter("k")).isNull();
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
		public boolean release(String key, String owner, String localWaiter, Duration recordFor) {
			return true;
		}

		@Override
		public void withdraw(String key, String owner) {
			HandoffWaitersTests.this.withdrawn.add(key + " " + owner);
		}

		@Override
		public AutoCloseable subscribe(Consumer<String> released, BiConsumer<String, String> granted) {
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
