package dev.holdfast.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockListener;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.abort;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The contract of semaphores whose permits are leases ({@link LockTemplate#acquirePermit}), on a
 * backend's single-key leases: at most {@code permits} holders at once across two instances, a
 * crashed holder's permit back within one lease time, instances that disagree on the permits
 * failing loudly, and a waiting call woken by the release of another slot (SEM-8, where the backend
 * announces it). {@link LockBackendContractTests} runs it on every backend, in about 3 s (SEM-8's
 * two tests about 10 s more: they wait until the calls' slices are long).
 */
public interface SemaphoreContractTests {

	/** How long the callers of {@link #atMostPermitsHoldersAtOnceAcrossTwoInstances} take permits. */
	Duration CALLERS_RUN_FOR = Duration.ofMillis(1200);

	/** Far above any caller's wait for a permit: a call that waits this long was stuck. */
	Duration PERMIT_WAIT = Duration.ofSeconds(20);

	/**
	 * How long a woken call may take from a release of another slot to its permit (SEM-8; about 10 ms
	 * unloaded): below the 450 ms its slice on another slot goes on at least without SEM-8.
	 */
	Duration WOKEN_WITHIN = Duration.ofMillis(400);

	/** A lock template on a new client of the backend: another instance of the application. */
	LockTemplate anotherInstance();

	/**
	 * {@link #anotherInstance()} whose waiters poll every {@code pollInterval}, observed by {@code listener}
	 * (for SEM-8's tests; {@link LockBackendContractTests} gives it). Not overridden, those tests are skipped.
	 */
	default LockTemplate anotherInstance(Duration pollInterval, LockListener listener) {
		return abort("anotherInstance(Duration, LockListener) is not overridden: SEM-8's tests need it");
	}

	/**
	 * Whether the backend announces every release of a permit slot, so that it wakes a call waiting on
	 * another slot (SEM-8): memory, Redis and PostgreSQL do; ZooKeeper and backends without release
	 * events do not, and skip the tests of it.
	 */
	default boolean wakesOnAnotherSlotsRelease() {
		return false;
	}

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


	/**
	 * SEM-8: a call waiting on one slot gets another slot within {@link #WOKEN_WITHIN} of its release by
	 * another instance, though it would go on waiting there for at least 450 ms more (its poll interval
	 * is 5 s, so its slices grow to seconds).
	 */
	@Test
	default void aReleaseOfAnotherSlotWakesTheWaitingCall() throws Exception {
		assumeTrue(wakesOnAnotherSlotsRelease(), "the backend announces no release of a slot nobody waits on");
		try (SlotReleased run = releaseAnotherSlot(1)) {
			try (Lease permit = run.calls().get(0).get(PERMIT_WAIT.toSeconds() + 5, TimeUnit.SECONDS)) {
				Duration took = Duration.ofNanos(System.nanoTime() - run.releasedAt());
				System.out.printf("%s: a call waiting on %s got %s %d ms after its release%n",
						SemaphoreContractTests.class.getSimpleName(), PermitWaits.keys(run.waiting()), permit.key(),
						took.toMillis());
				assertThat(permit.key()).as("the released slot").isEqualTo(run.released());
				assertThat(took).as("time from the release of another slot to the permit").isLessThan(WOKEN_WITHIN);
			}
		}
	}

	/**
	 * SEM-8: a release of a slot that neither of two waiting calls waits on wakes one of them, which gets
	 * it; the other goes on waiting in its slice, which a wake would have ended.
	 */
	@Test
	default void aReleaseWakesOneOfTwoWaitingCalls() throws Exception {
		assumeTrue(wakesOnAnotherSlotsRelease(), "the backend announces no release of a slot nobody waits on");
		try (SlotReleased run = releaseAnotherSlot(2)) {
			await().atMost(PERMIT_WAIT).pollInterval(Duration.ofMillis(2))
				.until(() -> run.calls().stream().anyMatch(Future::isDone));
			Duration took = Duration.ofNanos(System.nanoTime() - run.releasedAt());
			Lease permit = run.calls().stream().filter(Future::isDone).findFirst().orElseThrow().get();
			// held to the end: its release would wake the other call
			run.held().add(permit);
			assertThat(permit.key()).as("the released slot").isEqualTo(run.released());
			assertThat(took).as("time from the release of another slot to the permit").isLessThan(WOKEN_WITHIN);
			// the other call's slice is known to go on for `left` more: watched for part of that, it stays
			// open unless the release ended it too
			long left = run.waits().leftAtLeast(run.waiting(), System.nanoTime());
			assertThat(left).as("ns the other call's slice goes on at least").isPositive();
			Duration watch = Duration.ofNanos(Math.min(TimeUnit.MILLISECONDS.toNanos(50), left * 2 / 3));
			await().during(watch).atMost(watch.plusMillis(300)).pollInterval(Duration.ofMillis(2))
				.until(() -> run.waiting().stream().filter(run.waits()::stillOpen).count() == 1);
		}
	}

	/**
	 * SEM-8's setting: an instance holds the 3 permits of a semaphore; {@code calls} calls of another, whose
	 * poll interval is 5 s, wait until each has at least 450 ms of its slice on one slot left; then a slot
	 * none of them waits on is released.
	 */
	private SlotReleased releaseAnotherSlot(int calls) throws Exception {
		String name = "contract-semaphore-" + UUID.randomUUID();
		LockOptions options = LockOptions.defaults().waitTime(PERMIT_WAIT);
		LockTemplate holder = anotherInstance();
		List<Lease> held = new ArrayList<>();
		for (int i = 0; i < 3; i++) {
			held.add(holder.acquirePermit(name, null, 3, options));
		}
		Duration pollInterval = Duration.ofSeconds(5);
		PermitWaits waits = new PermitWaits(held.stream().map(Lease::key).collect(Collectors.toSet()), pollInterval);
		LockTemplate waiter = anotherInstance(pollInterval, waits);
		ExecutorService pool = callers(calls);
		List<Future<Lease>> futures = new ArrayList<>();
		try {
			for (int i = 0; i < calls; i++) {
				// a wait far beyond the time to reach long slices, which its deadline would cut
				futures.add(pool.submit(() -> waiter.acquirePermit(name, null, 3, options.waitTime(Duration.ofMinutes(1)))));
			}
			List<PermitWaits.Waiting> waiting = waits.awaitLongWaits(calls);
			Set<String> waitedOn = PermitWaits.keys(waiting);
			Lease released = held.stream().filter((lease) -> !waitedOn.contains(lease.key())).findFirst().orElseThrow();
			held.remove(released);
			long releasedAt = System.nanoTime();
			released.close();
			return new SlotReleased(held, pool, futures, waits, waiting, released.key(), releasedAt);
		}
		catch (Exception | Error ex) {
			new SlotReleased(held, pool, futures, waits, List.of(), "", 0).close();
			throw ex;
		}
	}

	/** What {@link #releaseAnotherSlot} did: closing it ends the calls and releases the permits held. */
	record SlotReleased(List<Lease> held, ExecutorService pool, List<Future<Lease>> calls, PermitWaits waits,
			List<PermitWaits.Waiting> waiting, String released, long releasedAt) implements AutoCloseable {

		@Override
		public void close() {
			this.pool.shutdownNow();
			this.held.forEach(Lease::close);
		}

	}

}
