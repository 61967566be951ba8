package dev.holdfast.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockListener;
import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockEngine;
import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.SharedLocks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.abort;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The contract of read-write locks ({@link LockMode#READ}, rules RWL-* in docs/DESIGN.md):
 * readers overlap and writers exclude both across two instances, a waiting writer is served before
 * a later reader and stops blocking readers once it gave up, a crashed reader delays a writer by
 * its lease at most, a reader's token sits between writes, no upgrade, a writer reads by reentry.
 * {@link LockBackendContractTests} runs it on every backend. Whether it applies is decided by the
 * backend, not by the test class: a backend that implements {@link SharedLocks} runs all of it;
 * one that does not must refuse {@code READ} loudly, naming itself
 * ({@link #readFailsLoudlyWhereTheBackendGivesNoReadHolds}), and the rest is skipped.
 */
public interface ReadWriteContractTests {

	/** How long the callers of {@link #readersOverlapAndWritersExcludeBoth} run. */
	Duration READERS_RUN_FOR = Duration.ofMillis(1500);

	/** Far above any caller's wait: a call that waits this long was stuck. */
	Duration READ_WRITE_WAIT = Duration.ofSeconds(20);

	/** The poll interval of the templates of {@link LockBackendContractTests}. */
	Duration POLL_INTERVAL = Duration.ofMillis(200);

	/**
	 * The poll interval of the waiting writer of {@link #aWaitingWriterIsServedBeforeALaterReader}. Its
	 * record lasts two poll intervals from each attempt (RWL-12, RWL-21, RWL-34), so a writer thread
	 * stalled for longer than about one interval lets it lapse, as a writer that gave up does; with
	 * 200 ms, gaps of 687 ms and 1,323 ms between two stamps let the later reader in on 2 loaded cores.
	 */
	Duration WAITING_WRITER_POLL_INTERVAL = Duration.ofSeconds(2);

	/**
	 * The lease time of the renewed join of {@link #aMixedJoinStaysValidAfterTheShorterHoldCloses}: renewed a
	 * third of it after each confirmation, it is lost if the renewals stall for about two thirds
	 * of it; with 600 ms (400 ms of slack), renewals 282 ms late were seen on 2 loaded cores.
	 */
	Duration MIXED_JOIN_LEASE = Duration.ofSeconds(3);

	/** A lock template on a new client of the backend: another instance of the application. */
	LockTemplate anotherInstance();

	/**
	 * Like {@link #anotherInstance(LockListener)}, its waiters pausing at most {@code pollInterval};
	 * not overridden, {@link #anotherInstance()} (the kit's poll interval: a waiting writer's record
	 * then lapses after a stall of about 200 ms).
	 */
	default LockTemplate anotherInstance(Duration pollInterval, LockListener listener) {
		return anotherInstance();
	}

	/**
	 * Like {@link #anotherInstance()}, telling {@code listener} what its locks do; optional: not
	 * overridden, the test that needs it ({@link #manyLocalReadersOfOneKeyLeaveNothingBehind}) is skipped.
	 */
	default LockTemplate anotherInstance(LockListener listener) {
		return abort("anotherInstance(LockListener) is not overridden: this test needs a template with a listener");
	}

	/** The executor that runs {@code threads} concurrent callers. */
	ExecutorService callers(int threads);

	/** Ends {@code instance} as a crash would: nothing is released, what it held expires on the backend. */
	void crash(LockTemplate instance) throws Exception;

	/**
	 * What the test class expects of its backend, required: {@code true} gives read holds,
	 * {@code false} refuses them. It is checked against the backend, which alone decides what runs:
	 * a test class (or a template decorating the engine) cannot skip the contract of a backend
	 * that gives read holds.
	 */
	boolean expectsReadHolds();

	/**
	 * Runs {@code call} on a caller thread of its own ({@link #callers}), never on the common pool:
	 * on a 2-core machine that pool has one worker, which Java 25's {@code CompletableFuture} uses, so
	 * a second call would queue behind a first one that blocks (a waiting writer) and never run.
	 */
	private <T> CompletableFuture<T> onACaller(Supplier<T> call) {
		ExecutorService caller = callers(1);
		CompletableFuture<T> result = CompletableFuture.supplyAsync(call, caller);
		result.whenComplete((value, failure) -> caller.shutdown());
		return result;
	}

	private CompletableFuture<Void> onACaller(Runnable call) {
		return onACaller(() -> {
			call.run();
			return null;
		});
	}

	/** Whether {@code template}'s backend gives read holds; checked against {@link #expectsReadHolds()}. */
	private boolean givesReadHolds(LockTemplate template) {
		LockBackend backend = ((LockEngine) template).backend();
		boolean gives = backend instanceof SharedLocks;
		assertThat(gives).as("whether the %s backend gives read holds (SharedLocks)", backend.name())
			.isEqualTo(expectsReadHolds());
		return gives;
	}

	private LockTemplate readingInstance() {
		LockTemplate template = anotherInstance();
		assumeTrue(givesReadHolds(template), "the backend gives no read holds: readFailsLoudly... runs instead");
		return template;
	}

	private static LockOptions read(Duration wait) {
		return LockOptions.defaults().mode(LockMode.READ).waitTime(wait);
	}

	private static String uniqueName() {
		return "contract-rw-" + UUID.randomUUID();
	}

	@Test
	default void readFailsLoudlyWhereTheBackendGivesNoReadHolds() {
		LockTemplate template = anotherInstance();
		assumeTrue(!givesReadHolds(template), "the backend gives read holds: the rest of the contract runs");
		String backend = ((LockEngine) template).backend().name();
		assertThatThrownBy(() -> template.acquire(uniqueName(), null, read(Duration.ZERO)))
			.isInstanceOfAny(UnsupportedOperationException.class, IllegalStateException.class)
			.hasMessageContaining(backend)
			.hasMessageContaining("read holds");
	}

	@Test
	default void readersOverlapAndWritersExcludeBoth() throws Exception {
		List<LockTemplate> instances = List.of(readingInstance(), anotherInstance());
		String name = uniqueName();
		int threadsPerInstance = 8;
		AtomicInteger readersNow = new AtomicInteger();
		AtomicInteger writersNow = new AtomicInteger();
		AtomicInteger mostReaders = new AtomicInteger();
		AtomicInteger reads = new AtomicInteger();
		AtomicInteger writes = new AtomicInteger();
		// The resource: the token of the last write it took, fenced (a write with a smaller token is refused).
		AtomicLong lastWrite = new AtomicLong();
		List<String> violations = new CopyOnWriteArrayList<>();
		long end = System.nanoTime() + READERS_RUN_FOR.toNanos();
		ExecutorService pool = callers(threadsPerInstance * 2);
		List<Future<?>> calls = new ArrayList<>();
		try {
			for (LockTemplate template : instances) {
				for (int t = 0; t < threadsPerInstance; t++) {
					calls.add(pool.submit(() -> {
						while (System.nanoTime() < end) {
							boolean writing = ThreadLocalRandom.current().nextInt(5) == 0;
							LockOptions options = writing ? LockOptions.defaults().waitTime(READ_WRITE_WAIT)
									: read(READ_WRITE_WAIT);
							try (Lease lease = template.acquire(name, null, options)) {
								if (writing) {
									if (writersNow.incrementAndGet() != 1 || readersNow.get() != 0) {
										violations.add("a writer beside another holder");
									}
									long token = lease.fencingToken();
									if (lastWrite.getAndAccumulate(token, Math::max) > token) {
										violations.add("a write with a token below the last write's");
									}
									TimeUnit.MILLISECONDS.sleep(1);
									writersNow.decrementAndGet();
									writes.incrementAndGet();
								}
								else {
									mostReaders.accumulateAndGet(readersNow.incrementAndGet(), Math::max);
									if (writersNow.get() != 0) {
										violations.add("a reader beside a writer");
									}
									if (lastWrite.get() > lease.fencingToken()) {
										violations.add("a stale read not told by its token: last write "
												+ lastWrite.get() + " > reader's " + lease.fencingToken());
									}
									TimeUnit.MILLISECONDS.sleep(3);
									readersNow.decrementAndGet();
									reads.incrementAndGet();
								}
								if (!lease.isValid()) {
									violations.add("a lease invalid while held");
								}
							}
						}
						return null;
					}));
				}
			}
			for (Future<?> call : calls) {
				call.get(READ_WRITE_WAIT.toSeconds() * 2, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		assertThat(violations).isEmpty();
		assertThat(reads.get()).isPositive();
		assertThat(writes.get()).isPositive();
		assertThat(mostReaders.get()).as("readers that held at once").isGreaterThan(1);
	}

	/**
	 * Local readers of one key joining and ending its read lease over and over leave nothing behind
	 * (RWL-18): no hold, no background call pending, no loss reported, and another instance's writer
	 * takes the key at once, not after the read lease's time to live.
	 */
	@Test
	default void manyLocalReadersOfOneKeyLeaveNothingBehind() throws Exception {
		AtomicInteger losses = new AtomicInteger();
		LockTemplate readers = anotherInstance(new LockListener() {
			@Override
			public void leaseLost(String name, String backend) {
				losses.incrementAndGet();
			}
		});
		assumeTrue(readers instanceof DefaultLockTemplate, "needs Holdfast's DefaultLockTemplate (its releases in flight)");
		assumeTrue(givesReadHolds(readers), "the backend gives no read holds: readFailsLoudly... runs instead");
		String name = uniqueName();
		AtomicInteger reads = new AtomicInteger();
		long end = System.nanoTime() + READERS_RUN_FOR.toNanos();
		ExecutorService pool = callers(8);
		try {
			List<Future<?>> calls = new ArrayList<>();
			for (int t = 0; t < 8; t++) {
				calls.add(pool.submit(() -> {
					while (System.nanoTime() < end) {
						try (Lease lease = readers.acquire(name, null, read(READ_WRITE_WAIT))) {
							reads.incrementAndGet();
						}
					}
					return null;
				}));
			}
			for (Future<?> call : calls) {
				call.get(READ_WRITE_WAIT.toSeconds() * 2, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		assertThat(reads.get()).isPositive();
		assertThat(((LockEngine) readers).heldLeases()).isEmpty();
		await().atMost(Duration.ofSeconds(2)).until(() -> ((DefaultLockTemplate) readers).releasesInFlight() == 0);
		anotherInstance().acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(2))).close();
		assertThat(losses).as("losses reported").hasValue(0);
	}

	@Test
	default void aWaitingWriterIsServedBeforeALaterReader() throws Exception {
		LockTemplate first = readingInstance();
		// Its record outlives a stall of its thread on a loaded machine (WAITING_WRITER_POLL_INTERVAL).
		LockTemplate writer = anotherInstance(WAITING_WRITER_POLL_INTERVAL, LockListener.NONE);
		LockTemplate later = anotherInstance();
		String name = uniqueName();
		List<String> order = new CopyOnWriteArrayList<>();
		Lease held = first.acquire(name, null, read(Duration.ZERO));
		CompletableFuture<Void> writing = onACaller(() -> {
			try (Lease lease = writer.acquire(name, null, LockOptions.defaults().waitTime(READ_WRITE_WAIT))) {
				order.add("writer");
				sleep(Duration.ofMillis(100));
			}
		});
		// Once the writer waits, a new reader is refused.
		await().atMost(Duration.ofSeconds(10)).until(() -> {
			Optional<Lease> reader = later.tryAcquire(name, null, read(Duration.ZERO));
			reader.ifPresent(Lease::close);
			return reader.isEmpty();
		});
		CompletableFuture<Void> reading = onACaller(() -> {
			try (Lease lease = later.acquire(name, null, read(READ_WRITE_WAIT))) {
				order.add("reader");
			}
		});
		// Not a wait for a condition: time for the later reader's attempts, which must all be refused.
		sleep(POLL_INTERVAL);
		assertThat(order).isEmpty();
		held.close();
		writing.get(30, TimeUnit.SECONDS);
		reading.get(30, TimeUnit.SECONDS);
		assertThat(order).containsExactly("writer", "reader");
	}

	@Test
	default void aWriterThatGaveUpStopsBlockingReadersWithinTwoPollIntervals() throws Exception {
		LockTemplate first = readingInstance();
		LockTemplate writer = anotherInstance();
		LockTemplate later = anotherInstance();
		String name = uniqueName();
		try (Lease held = first.acquire(name, null, read(Duration.ZERO))) {
			assertThat(writer.tryAcquire(name, null, LockOptions.defaults().waitTime(Duration.ofMillis(600))))
				.isEmpty();
			long gaveUp = System.nanoTime();
			// two poll intervals, and a margin for a loaded machine
			await().atMost(POLL_INTERVAL.multipliedBy(2).plusMillis(500)).pollInterval(Duration.ofMillis(10)).until(() -> {
				Optional<Lease> reader = later.tryAcquire(name, null, read(Duration.ZERO));
				reader.ifPresent(Lease::close);
				return reader.isPresent();
			});
			assertThat(Duration.ofNanos(System.nanoTime() - gaveUp)).isLessThan(POLL_INTERVAL.multipliedBy(2).plusMillis(500));
		}
	}

	@Test
	default void aCrashedReaderDelaysAWriterByAtMostItsLease() throws Exception {
		LockTemplate crashing = readingInstance();
		LockTemplate writer = anotherInstance();
		String name = uniqueName();
		Duration lease = Duration.ofMillis(1000);
		crashing.acquire(name, null, read(Duration.ZERO).leaseTime(lease));
		crash(crashing);
		long start = System.nanoTime();
		try (Lease written = writer.acquire(name, null, LockOptions.defaults().waitTime(READ_WRITE_WAIT))) {
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(lease.plusMillis(1500));
		}
	}

	@Test
	default void readerTokensSitBetweenWrites() {
		LockTemplate reader = readingInstance();
		LockTemplate writer = anotherInstance();
		String name = uniqueName();
		LockOptions write = LockOptions.defaults().waitTime(READ_WRITE_WAIT);
		long first;
		try (Lease lease = writer.acquire(name, null, write)) {
			first = lease.fencingToken();
		}
		long read;
		try (Lease lease = reader.acquire(name, null, read(READ_WRITE_WAIT))) {
			read = lease.fencingToken();
		}
		try (Lease lease = writer.acquire(name, null, write)) {
			assertThat(first).isLessThanOrEqualTo(read);
			assertThat(lease.fencingToken()).isGreaterThan(read);
		}
	}

	@Test
	default void upgradeFailsAtOnce() {
		LockTemplate template = readingInstance();
		String name = uniqueName();
		try (Lease lease = template.acquire(name, null, read(READ_WRITE_WAIT))) {
			long start = System.nanoTime();
			assertThatIllegalStateException()
				.isThrownBy(() -> template.acquire(name, null, LockOptions.defaults().waitTime(READ_WRITE_WAIT)))
				.withMessageContaining("RWL-4");
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(1));
		}
	}

	@Test
	default void theWriteHolderReadsByReentry() {
		LockTemplate template = readingInstance();
		LockTemplate other = anotherInstance();
		String name = uniqueName();
		try (Lease write = template.acquire(name, null, LockOptions.defaults().waitTime(READ_WRITE_WAIT))) {
			try (Lease read = template.acquire(name, null, read(Duration.ZERO))) {
				assertThat(read.fencingToken()).isEqualTo(write.fencingToken());
				assertThat(other.tryAcquire(name, null, read(Duration.ZERO))).isEmpty();
			}
			assertThat(write.isValid()).isTrue();
		}
		Optional<Lease> after = other.tryAcquire(name, null, read(READ_WRITE_WAIT));
		assertThat(after).isPresent();
		after.get().close();
	}

	@Test
	default void aJoinAfterForcedReleaseAndAWriteLosesTheOldLease() throws Exception {
		LockTemplate template = readingInstance();
		LockTemplate writer = anotherInstance();
		String name = uniqueName();
		Lease first = template.acquire(name, null, read(Duration.ZERO));
		assertThat(operator(template).forceRelease(first.key(), null)).isTrue();
		try (Lease written = writer.acquire(name, null, LockOptions.defaults().waitTime(READ_WRITE_WAIT))) {
			assertThat(written.fencingToken()).isGreaterThan(first.fencingToken());
		}
		// a second thread of the same template reads while the first lease still looks valid there
		Lease other = onACaller(() -> template.acquire(name, null, read(READ_WRITE_WAIT)))
			.get(30, TimeUnit.SECONDS);
		assertThat(first.isValid()).as("the first read lease, whose group ended").isFalse();
		assertThat(other.isValid()).isTrue();
		assertThat(other.fencingToken()).isGreaterThan(first.fencingToken());
		first.close();
		assertThat(writer.tryAcquire(name, null, LockOptions.defaults().waitTime(Duration.ZERO))).isEmpty();
		other.close();
	}

	@Test
	default void aSecondThreadOfTheHoldingInstanceIsRefusedWhileAWriterWaits() throws Exception {
		LockTemplate holding = readingInstance();
		LockTemplate writer = anotherInstance();
		String name = uniqueName();
		Lease held = holding.acquire(name, null, read(Duration.ZERO));
		CompletableFuture<Long> writing = onACaller(() -> {
			try (Lease lease = writer.acquire(name, null, LockOptions.defaults().waitTime(READ_WRITE_WAIT))) {
				return lease.fencingToken();
			}
		});
		await().atMost(Duration.ofSeconds(10)).until(() -> {
			Optional<Lease> reader = onACaller(() -> holding.tryAcquire(name, null, read(Duration.ZERO)))
				.get(30, TimeUnit.SECONDS);
			reader.ifPresent(Lease::close);
			return reader.isEmpty();
		});
		assertThat(held.isValid()).as("a refused join leaves the read lease held").isTrue();
		assertThat(writing).isNotDone();
		held.close();
		assertThat(writing.get(30, TimeUnit.SECONDS)).isGreaterThan(held.fencingToken());
	}

	@Test
	default void aMixedJoinStaysValidAfterTheShorterHoldCloses() throws Exception {
		LockTemplate holding = readingInstance();
		LockTemplate writer = anotherInstance();
		LockOptions write = LockOptions.defaults().waitTime(Duration.ZERO);
		String renewed = uniqueName();
		// a joiner that renews keeps the lease after the first (not renewed) hold closed, valid beyond its lease time
		Lease first = holding.acquire(renewed, null, read(Duration.ZERO).leaseTime(MIXED_JOIN_LEASE).renew(false));
		Lease joiner = onACaller(() -> holding.acquire(renewed, null,
					read(Duration.ZERO).leaseTime(MIXED_JOIN_LEASE).renew(true)))
			.get(30, TimeUnit.SECONDS);
		first.close();
		await().during(MIXED_JOIN_LEASE.plusSeconds(1)).atMost(Duration.ofSeconds(10)).until(joiner::isValid);
		assertThat(writer.tryAcquire(renewed, null, write)).isEmpty();
		joiner.close();
		// a joiner with a shorter lease never shortens the first hold's
		String longer = uniqueName();
		Lease held = holding.acquire(longer, null, read(Duration.ZERO).leaseTime(Duration.ofSeconds(20)).renew(false));
		onACaller(() -> holding.acquire(longer, null,
					read(Duration.ZERO).leaseTime(Duration.ofMillis(300)).renew(false)).close())
			.get(30, TimeUnit.SECONDS);
		await().during(Duration.ofMillis(1000)).atMost(Duration.ofSeconds(5)).until(held::isValid);
		assertThat(writer.tryAcquire(longer, null, write)).isEmpty();
		held.close();
	}

	@Test
	default void aRefusedReaderRenewalIsLostWhileItsNeighboursSucceeds() {
		LockTemplate holding = readingInstance();
		LockOptions renewed = read(Duration.ZERO).leaseTime(Duration.ofMillis(600)).renew(true);
		Lease refused = holding.acquire(uniqueName(), null, renewed);
		Lease neighbour = holding.acquire(uniqueName(), null, renewed);
		assertThat(operator(holding).forceRelease(refused.key(), null)).isTrue();
		await().atMost(Duration.ofSeconds(5)).until(() -> !refused.isValid());
		await().during(Duration.ofMillis(1000)).atMost(Duration.ofSeconds(5)).until(neighbour::isValid);
		refused.close();
		neighbour.close();
	}

	/** The backend of {@code template} as an operator, for a forced release (every SharedLocks backend lists and forces: 0048). */
	private static ClusterLocks operator(LockTemplate template) {
		LockBackend backend = ((LockEngine) template).backend();
		assertThat(backend).as("a backend that gives read holds can be force-released").isInstanceOf(ClusterLocks.class);
		return (ClusterLocks) backend;
	}

	private static void sleep(Duration duration) {
		try {
			TimeUnit.NANOSECONDS.sleep(duration.toNanos());
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			throw new IllegalStateException(ex);
		}
	}

}
