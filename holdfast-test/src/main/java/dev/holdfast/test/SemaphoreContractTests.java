package dev.holdfast.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * The contract of semaphores whose permits are leases ({@link LockTemplate#acquirePermit}), on a
 * backend's single-key leases: at most {@code permits} holders at once across two instances, a
 * crashed holder's permit back within one lease time, and instances that disagree on the permits
 * failing loudly. {@link LockBackendContractTests} runs it on every backend, in about 3 s.
 */
public interface SemaphoreContractTests {

	/** How long the callers of {@link #atMostPermitsHoldersAtOnceAcrossTwoInstances} take permits. */
	Duration CALLERS_RUN_FOR = Duration.ofMillis(1200);

	/** Far above any caller's wait for a permit: a call that waits this long was stuck. */
	Duration PERMIT_WAIT = Duration.ofSeconds(20);

	/** A lock template on a new client of the backend: another instance of the application. */
	LockTemplate anotherInstance();

	/** The executor that runs {@code threads} concurrent callers. */
	ExecutorService callers(int threads);

	/**
	 * Ends {@code instance} as a crash would: nothing is released, renewals stop, its client of the
	 * backend is closed (or, where closing would free its locks at once, as a ZooKeeper session's
	 * close does, left open as a frozen process's); what it held expires on the backend.
	 */
	void crash(LockTemplate instance) throws Exception;

	@Test
	default void atMostPermitsHoldersAtOnceAcrossTwoInstances() throws Exception {
		String name = "contract-semaphore-" + UUID.randomUUID();
		int permits = 3;
		int threadsPerInstance = 4;
		AtomicInteger holders = new AtomicInteger();
		AtomicInteger mostHolders = new AtomicInteger();
		AtomicInteger taken = new AtomicInteger();
		AtomicInteger invalid = new AtomicInteger();
		LockOptions options = LockOptions.defaults().waitTime(PERMIT_WAIT);
		List<LockTemplate> instances = List.of(anotherInstance(), anotherInstance());
		long end = System.nanoTime() + CALLERS_RUN_FOR.toNanos();
		ExecutorService pool = callers(threadsPerInstance * 2);
		List<Future<?>> calls = new ArrayList<>();
		try {
			for (LockTemplate template : instances) {
				for (int t = 0; t < threadsPerInstance; t++) {
					calls.add(pool.submit(() -> {
						while (System.nanoTime() < end) {
							try (Lease permit = template.acquirePermit(name, null, permits, options)) {
								mostHolders.accumulateAndGet(holders.incrementAndGet(), Math::max);
								Thread.sleep(5);
								holders.decrementAndGet();
								if (!permit.isValid()) {
									invalid.incrementAndGet();
								}
							}
							taken.incrementAndGet();
						}
						return null;
					}));
				}
			}
			for (Future<?> call : calls) {
				// a call that failed (stuck, or a disagreement found between equal instances) fails here
				call.get(CALLERS_RUN_FOR.plus(PERMIT_WAIT).toSeconds() + 30, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		System.out.printf("%s: %d permits taken in %s by %d callers, at most %d at once%n",
				SemaphoreContractTests.class.getSimpleName(), taken.get(), CALLERS_RUN_FOR, threadsPerInstance * 2,
				mostHolders.get());
		assertThat(mostHolders.get()).as("holders of %d permits at once", permits).isBetween(1, permits);
		assertThat(invalid).as("permits no longer valid at their end").hasValue(0);
		assertThat(taken.get()).as("permits taken").isGreaterThan(threadsPerInstance);
	}

	@Test
	default void aCrashedHoldersPermitComesBackWithinOneLease() throws Exception {
		String name = "contract-semaphore-" + UUID.randomUUID();
		Duration lease = Duration.ofMillis(800);
		LockTemplate holder = anotherInstance();
		LockTemplate other = anotherInstance();
		LockOptions options = LockOptions.defaults().leaseTime(lease).waitTime(PERMIT_WAIT);
		Lease first = holder.acquirePermit(name, "tenant-1", 2, options);
		Lease second = other.acquirePermit(name, "tenant-1", 2, options);
		assertThat(other.tryAcquirePermit(name, "tenant-1", 2, options.waitTime(Duration.ZERO)))
			.as("a third permit of 2").isEmpty();
		long crashed = System.nanoTime();
		crash(holder);
		try (Lease back = other.acquirePermit(name, "tenant-1", 2, options)) {
			Duration took = Duration.ofNanos(System.nanoTime() - crashed);
			assertThat(back.key()).as("the crashed holder's slot").isEqualTo(first.key());
			assertThat(took).as("time until the crashed holder's permit came back")
				.isLessThan(lease.plus(Duration.ofMillis(1500)));
		}
		finally {
			second.close();
		}
	}

	@Test
	default void instancesThatDisagreeOnThePermitsFailTheCallNamingTheFix() throws Exception {
		String name = "contract-semaphore-" + UUID.randomUUID();
		LockTemplate more = anotherInstance();
		LockTemplate fewer = anotherInstance();
		LockOptions options = LockOptions.defaults().waitTime(Duration.ofSeconds(5));
		List<Lease> held = new ArrayList<>();
		try {
			for (int i = 0; i < 4; i++) {
				held.add(more.acquirePermit(name, null, 4, options));
			}
			assertThatIllegalStateException()
				.isThrownBy(() -> fewer.tryAcquirePermit(name, null, 3, options.waitTime(Duration.ofSeconds(2))))
				.withMessageContaining("slot #3 held")
				.withMessageContaining("same permits");
		}
		finally {
			held.forEach(Lease::close);
		}
	}

}
