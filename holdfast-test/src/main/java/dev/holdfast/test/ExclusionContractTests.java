package dev.holdfast.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;

import static dev.holdfast.test.ContractLocks.free;
import static dev.holdfast.test.ContractLocks.uniqueName;
import static dev.holdfast.test.ContractLocks.waitFor;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The contract of mutual exclusion: two instances never hold one lock at once, keys are locks of
 * their own, a released lock is taken again at once, a waiter gives up after its wait time,
 * fencing tokens increase across holders, the holding thread reenters and another thread of its
 * instance waits. {@link LockBackendContractTests} runs it on every backend.
 */
public interface ExclusionContractTests {

	/**
	 * How long a test waits for a lock that should be free. One attempt is not enough for every
	 * backend: a Redlock attempt can miss its quorum on a loaded machine and is retried.
	 */
	Duration FREE_LOCK_WAIT = Duration.ofSeconds(5);

	/** A lock template on a new client of the backend: another instance of the application. */
	LockTemplate anotherInstance();

	/** The executor that runs {@code threads} concurrent callers. */
	ExecutorService callers(int threads);

	@Test
	default void twoClientsNeverHoldTheLockAtOnce() throws Exception {
		LockTemplate first = anotherInstance();
		LockTemplate second = anotherInstance();
		String name = uniqueName();
		int threadsPerClient = 4;
		int rounds = 15;
		int[] counter = { 0 };
		AtomicInteger inside = new AtomicInteger();
		AtomicInteger overlaps = new AtomicInteger();
		ExecutorService pool = callers(threadsPerClient * 2);
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (LockTemplate template : List.of(first, second)) {
				for (int t = 0; t < threadsPerClient; t++) {
					futures.add(pool.submit(() -> {
						for (int i = 0; i < rounds; i++) {
							template.executeLocked(name, null, waitFor(Duration.ofSeconds(30)), () -> {
								if (inside.incrementAndGet() > 1) {
									overlaps.incrementAndGet();
								}
								int read = counter[0];
								Thread.sleep(1);
								counter[0] = read + 1;
								inside.decrementAndGet();
								return null;
							});
						}
						return null;
					}));
				}
			}
			for (Future<?> future : futures) {
				future.get(120, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		assertThat(overlaps.get()).as("holders that overlapped").isZero();
		assertThat(counter[0]).as("read-sleep-write increments (lost updates show as fewer)")
			.isEqualTo(2 * threadsPerClient * rounds);
	}

	@Test
	default void differentKeysAreIndependentLocks() {
		LockTemplate first = anotherInstance();
		LockTemplate second = anotherInstance();
		String name = uniqueName();
		try (Lease a = first.acquire(name, "a", free())) {
			assertThat(second.tryAcquire(name, "a", waitFor(Duration.ZERO))).isEmpty();
			try (Lease b = second.acquire(name, "b", free())) {
				assertThat(b.key()).isNotEqualTo(a.key());
			}
			try (Lease other = second.acquire(name + "-other", null, free())) {
				assertThat(other.isValid()).isTrue();
			}
		}
	}

	@Test
	default void anotherClientRelocksRightAfterRelease() {
		LockTemplate first = anotherInstance();
		LockTemplate second = anotherInstance();
		String name = uniqueName();
		for (int i = 0; i < 10; i++) {
			first.acquire(name, null, free()).close();
			second.acquire(name, null, free()).close();
		}
	}

	@Test
	default void waiterGivesUpAfterItsWaitTime() {
		LockTemplate first = anotherInstance();
		LockTemplate second = anotherInstance();
		String name = uniqueName();
		try (Lease held = first.acquire(name, null, free())) {
			long start = System.nanoTime();
			Optional<Lease> lease = second.tryAcquire(name, null, waitFor(Duration.ofMillis(400)));
			Duration waited = Duration.ofNanos(System.nanoTime() - start);
			assertThat(lease).isEmpty();
			assertThat(waited).isBetween(Duration.ofMillis(390), Duration.ofSeconds(3));
		}
	}

	@Test
	default void fencingTokensStrictlyIncreaseAcrossHolders() throws Exception {
		LockTemplate first = anotherInstance();
		LockTemplate second = anotherInstance();
		String name = uniqueName();
		long last = Long.MIN_VALUE;
		for (int i = 0; i < 20; i++) {
			LockTemplate template = (i % 2 == 0) ? first : second;
			try (Lease lease = template.acquire(name, "k", free())) {
				assertThat(lease.fencingToken()).isGreaterThan(last);
				last = lease.fencingToken();
			}
		}
		Lease expiring = first.acquire(name, "k",
				LockOptions.defaults().leaseTime(Duration.ofMillis(200)).renew(false).waitTime(FREE_LOCK_WAIT));
		// the acquisition waits for the expiry
		try (Lease next = second.acquire(name, "k", free())) {
			assertThat(next.fencingToken()).isGreaterThan(expiring.fencingToken()).isGreaterThan(last);
		}
		expiring.close();
	}

	@Test
	default void sameThreadReentersWithoutDeadlock() {
		LockTemplate first = anotherInstance();
		LockTemplate second = anotherInstance();
		String name = uniqueName();
		try (Lease outer = first.acquire(name, null, free())) {
			try (Lease inner = first.acquire(name, null, free())) {
				assertThat(inner.fencingToken()).isEqualTo(outer.fencingToken());
			}
			assertThat(outer.isValid()).isTrue();
			assertThat(second.tryAcquire(name, null, waitFor(Duration.ZERO))).as("still held after the inner release")
				.isEmpty();
		}
		assertThat(second.tryAcquire(name, null, free())).isPresent().get().satisfies(Lease::close);
	}

	@Test
	default void otherThreadOfTheSameProcessWaits() throws Exception {
		LockTemplate template = anotherInstance();
		String name = uniqueName();
		try (Lease held = template.acquire(name, null, free())) {
			ExecutorService pool = callers(1);
			try {
				assertThat(pool.submit(() -> template.tryAcquire(name, null, waitFor(Duration.ZERO))).get()).isEmpty();
			}
			finally {
				pool.shutdownNow();
			}
		}
	}

}
