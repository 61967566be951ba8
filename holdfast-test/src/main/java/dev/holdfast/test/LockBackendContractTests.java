package dev.holdfast.test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import io.micrometer.observation.Observation;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LeaseInfo;
import dev.holdfast.LockInterruptedException;
import dev.holdfast.LockListener;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.spi.ReleaseEvents;

import static dev.holdfast.test.ContractLocks.free;
import static dev.holdfast.test.ContractLocks.waitFor;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The contract every backend passes, as a JUnit 5 class that a backend's test extends. A subclass
 * supplies independent clients of one shared backend server ({@link #newBackend()}): two
 * templates built here behave like two processes of a cluster. A backend that implements
 * {@link dev.holdfast.spi.TickClaims} also implements {@link TickClaimsContractTests}. The
 * contracts of mutual exclusion, {@link ExclusionContractTests}, of several keys at once,
 * {@link MultiKeyContractTests}, of semaphores, {@link SemaphoreContractTests}, and of read-write
 * locks, {@link ReadWriteContractTests} (all of it where the backend gives read holds, else its
 * loud refusal), come with it.
 */
public abstract class LockBackendContractTests
		implements ExclusionContractTests, MultiKeyContractTests, SemaphoreContractTests, ReadWriteContractTests {

	private final List<DefaultLockTemplate> templates = new ArrayList<>();

	private final List<LockBackend> backends = new ArrayList<>();

	/**
	 * A new client of the shared backend server, independent of every other one returned (its
	 * own connections, subscriptions and state), as if it ran in another process.
	 */
	protected abstract LockBackend newBackend();

	/**
	 * A lock template, as an application gets it, on a {@linkplain #newBackend() new client}:
	 * another process of the cluster. It is closed after the test.
	 */
	protected LockTemplate newTemplate() {
		return newEngine(settings());
	}

	private LockSettings settings() {
		return LockSettings.defaults().withPollInterval(Duration.ofMillis(200));
	}

	private DefaultLockTemplate newEngine(LockSettings settings) {
		return newEngine(trackBackend(newBackend()), settings);
	}

	private DefaultLockTemplate newEngine(LockBackend backend, LockSettings settings) {
		return newEngine(backend, settings, LockListener.NONE);
	}

	private DefaultLockTemplate newEngine(LockBackend backend, LockSettings settings, LockListener listener) {
		DefaultLockTemplate template = new DefaultLockTemplate(backend, settings, listener);
		this.templates.add(template);
		return template;
	}

	/** Registers a backend made outside {@link #newTemplate()} to be closed after the test. */
	protected <B extends LockBackend> B trackBackend(B backend) {
		this.backends.add(backend);
		return backend;
	}

	@AfterEach
	void closeTemplates() throws Exception {
		for (DefaultLockTemplate template : this.templates) {
			template.close();
		}
		for (LockBackend backend : this.backends) {
			if (backend instanceof AutoCloseable closeable) {
				closeable.close();
			}
		}
	}

	/**
	 * The executor on which tests run concurrent callers; subclasses may run them on other kinds
	 * of threads (virtual threads).
	 */
	protected ExecutorService newExecutor(int threads) {
		return Executors.newFixedThreadPool(threads);
	}

	@Override
	public LockTemplate anotherInstance() {
		return newTemplate();
	}

	@Override
	public LockTemplate anotherInstance(LockListener listener) {
		return newEngine(trackBackend(newBackend()), settings(), listener);
	}

	@Override
	public LockTemplate anotherInstance(Duration pollInterval, LockListener listener) {
		return newEngine(trackBackend(newBackend()), settings().withPollInterval(pollInterval), listener);
	}

	@Override
	public ExecutorService callers(int threads) {
		return newExecutor(threads);
	}

	/**
	 * Closes the engine, which releases nothing and leaves what it holds to expire on the backend
	 * (SHD-2), and its client of the backend, unless clients share one backend (memory).
	 */
	@Override
	public void crash(LockTemplate instance) throws Exception {
		DefaultLockTemplate engine = (DefaultLockTemplate) instance;
		this.templates.remove(engine);
		engine.close();
		if (this.backends.remove(engine.backend()) && engine.backend() instanceof AutoCloseable closeable) {
			closeable.close();
		}
	}

	/** An unstarted thread for a concurrent caller; see {@link #newExecutor(int)}. */
	protected Thread newThread(Runnable task) {
		return new Thread(task);
	}

	protected static String uniqueName() {
		return ContractLocks.uniqueName();
	}

	@Test
	void keysWithAnyCharactersAreDistinctLocks() {
		LockTemplate first = newTemplate();
		LockTemplate second = newTemplate();
		String name = uniqueName();
		try (Lease colon = first.acquire(name, "a:b", free());
				Lease braces = first.acquire(name, "{x} \u00e9\u20ac\n", free())) {
			assertThat(second.tryAcquire(name + ":a", "b", free())).isPresent()
				.get()
				.satisfies(Lease::close);
			assertThat(second.tryAcquire(name, "a:b", waitFor(Duration.ZERO))).isEmpty();
			assertThat(second.tryAcquire(name, "{x} \u00e9\u20ac\n", waitFor(Duration.ZERO))).isEmpty();
			String longKey = "k".repeat(5000);
			try (Lease hashed = second.acquire(name, longKey, free())) {
				assertThat(hashed.key().length()).isLessThanOrEqualTo(settings().maxKeyLength());
				assertThat(first.tryAcquire(name, longKey, waitFor(Duration.ZERO))).isEmpty();
				assertThat(first.tryAcquire(name, longKey + "x", free())).isPresent()
					.get()
					.satisfies(Lease::close);
			}
		}
	}

	@Test
	void expiredLeaseCanBeTakenOver() throws Exception {
		LockTemplate first = newTemplate();
		LockTemplate second = newTemplate();
		String name = uniqueName();
		Lease expiring = first.acquire(name, null,
				LockOptions.defaults().leaseTime(Duration.ofMillis(400)).renew(false).waitTime(FREE_LOCK_WAIT));
		assertThat(second.tryAcquire(name, null, waitFor(Duration.ZERO))).isEmpty();
		long start = System.nanoTime();
		try (Lease taker = second.acquire(name, null, waitFor(Duration.ofSeconds(5)))) {
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
			assertThat(taker.fencingToken()).isGreaterThan(expiring.fencingToken());
			assertThat(expiring.isValid()).isFalse();
			expiring.close();
			assertThat(first.tryAcquire(name, null, waitFor(Duration.ZERO))).as("the old owner's release must not free it")
				.isEmpty();
		}
	}

	@Test
	void releaseByAnotherOwnerIsIgnored() {
		LockBackend backend = trackBackend(newBackend());
		LockBackend other = trackBackend(newBackend());
		String key = "holdfast:" + uniqueName();
		AcquireResult result = backend.tryAcquire(key, "owner-1", Duration.ofSeconds(10));
		assertThat(result.acquired()).isTrue();
		assertThat(other.release(key, "owner-2")).isFalse();
		assertThat(other.tryAcquire(key, "owner-2", Duration.ofSeconds(10)).acquired()).isFalse();
		if (other instanceof LeaseRenewal renewal) {
			assertThat(renewal.renew(List.of(new HeldLock(key, "owner-2", Duration.ofSeconds(10))))).isEmpty();
		}
		assertThat(backend.release(key, "owner-1")).isTrue();
		assertThat(backend.release(key, "owner-1")).as("a second release finds nothing").isFalse();
	}

	@Test
	void heldLockReportsHolderRemainingTimeWithinItsTtl() {
		LockBackend backend = trackBackend(newBackend());
		String key = "holdfast:" + uniqueName();
		assertThat(backend.tryAcquire(key, "owner-1", Duration.ofSeconds(10)).acquired()).isTrue();
		AcquireResult held = backend.tryAcquire(key, "owner-2", Duration.ofSeconds(10));
		assertThat(held.acquired()).isFalse();
		assertThat(held.holderRemainingMillis()).isLessThanOrEqualTo(10_000);
		backend.release(key, "owner-1");
	}

	@Test
	void renewalKeepsTheLockPastItsTtl() throws Exception {
		LockTemplate first = newTemplate();
		LockTemplate second = newTemplate();
		String name = uniqueName();
		try (Lease lease = first.acquire(name, null,
				LockOptions.defaults().leaseTime(Duration.ofMillis(600)).waitTime(FREE_LOCK_WAIT))) {
			assertThat(second.tryAcquire(name, null, waitFor(Duration.ofMillis(1800))))
				.as("another client trying for three TTLs").isEmpty();
			assertThat(lease.isValid()).isTrue();
		}
		assertThat(second.tryAcquire(name, null, free())).isPresent().get().satisfies(Lease::close);
	}

	@Test
	void leaseCanBeExtended() throws Exception {
		LockTemplate first = newTemplate();
		LockTemplate second = newTemplate();
		String name = uniqueName();
		try (Lease lease = first.acquire(name, null,
				LockOptions.defaults().leaseTime(Duration.ofMillis(500)).renew(false).waitTime(FREE_LOCK_WAIT))) {
			assertThat(lease.extend(Duration.ofSeconds(5))).isTrue();
			assertThat(second.tryAcquire(name, null, waitFor(Duration.ofMillis(900))))
				.as("another client trying past the original TTL").isEmpty();
			assertThat(lease.isValid()).isTrue();
		}
	}

	@Test
	void lostLeaseIsDetected() throws Exception {
		FlakyRenewals flaky = new FlakyRenewals(newBackend());
		trackBackend(flaky.delegate);
		LostLeases losses = new LostLeases();
		DefaultLockTemplate first = newEngine(flaky.backend(), settings(), losses);
		LockTemplate second = newTemplate();
		String name = uniqueName();
		Lease lease = first.acquire(name, null,
				LockOptions.defaults().leaseTime(Duration.ofMillis(500)).waitTime(FREE_LOCK_WAIT));
		flaky.failing.set(true);
		try (Lease taker = second.acquire(name, null, waitFor(Duration.ofSeconds(5)))) {
			assertThat(lease.isValid()).as("a lease past its validity is not valid").isFalse();
			flaky.failing.set(false);
			await().atMost(Duration.ofSeconds(5))
				.until(() -> first.heldLeases().stream().noneMatch(LeaseInfo::valid));
			assertThat(lease.isValid()).isFalse();
			assertThat(taker.isValid()).isTrue();
			assertThat(lease.extend(Duration.ofSeconds(5))).as("a lost lease cannot be extended").isFalse();
			lease.close();
			assertThat(losses.reported()).as("losses reported (leaseLost, the hold's observation), the release included")
				.containsExactly(1, 1);
			assertThat(taker.isValid()).isTrue();
			assertThat(first.tryAcquire(name, null, waitFor(Duration.ZERO))).isEmpty();
		}
	}

	/**
	 * A paused holder, or one without renewal, finds its lease run out when it releases it: the
	 * loss is reported then, once, as a failed renewal reports it ({@link LockListener#leaseLost},
	 * the hold's observation ends lost, and a WARN from the engine).
	 */
	@Test
	void leaseThatRanOutUnrenewedIsReportedLostAtItsReleaseOnce() throws Exception {
		LostLeases losses = new LostLeases();
		DefaultLockTemplate template = newEngine(trackBackend(newBackend()), settings(), losses);
		Lease lease = template.acquire(uniqueName(), null,
				LockOptions.defaults().leaseTime(Duration.ofMillis(300)).renew(false).waitTime(FREE_LOCK_WAIT));
		await().atMost(Duration.ofSeconds(5)).until(() -> !lease.isValid());
		lease.close();
		assertThat(losses.reported()).as("losses reported (leaseLost, the hold's observation) at the release")
			.containsExactly(1, 1);
		lease.close();
		assertThat(losses.reported()).as("after a second close").containsExactly(1, 1);
	}

	@Test
	void waiterWakesPromptlyAfterRelease() throws Exception {
		boolean notifying = newBackendSupportsReleaseEvents();
		Duration poll = notifying ? Duration.ofSeconds(3) : Duration.ofMillis(200);
		LockTemplate first = newEngine(settings().withPollInterval(poll));
		LockTemplate second = newEngine(settings().withPollInterval(poll));
		String name = uniqueName();
		Lease held = first.acquire(name, null, free());
		AtomicReference<Long> acquiredAt = new AtomicReference<>();
		CountDownLatch started = new CountDownLatch(1);
		Thread waiter = newThread(() -> {
			started.countDown();
			try (Lease lease = second.acquire(name, null, waitFor(Duration.ofSeconds(20)))) {
				acquiredAt.set(System.nanoTime());
			}
		});
		waiter.start();
		started.await();
		awaitParked(waiter);
		assertThat(acquiredAt.get()).isNull();
		long releasedAt = System.nanoTime();
		held.close();
		waiter.join(15_000);
		assertThat(acquiredAt.get()).isNotNull();
		Duration wake = Duration.ofNanos(acquiredAt.get() - releasedAt);
		assertThat(wake).as("wake-up after release, polling every %s", poll)
			.isLessThan(notifying ? Duration.ofMillis(1500) : poll.plusSeconds(1));
	}

	/**
	 * Waits until {@code thread} has stayed parked for 100 ms: waiting for the lock, not inside a
	 * backend round trip (which takes well under a millisecond on loopback).
	 */
	private static void awaitParked(Thread thread) {
		await().during(Duration.ofMillis(100)).atMost(Duration.ofSeconds(5))
			.until(() -> thread.getState() == Thread.State.WAITING || thread.getState() == Thread.State.TIMED_WAITING);
	}

	/**
	 * Whether the backend announces releases, once it has talked to its server (a JDBC backend
	 * knows only then which database it is on, and announces releases on PostgreSQL only).
	 */
	private boolean newBackendSupportsReleaseEvents() {
		LockBackend backend = trackBackend(newBackend());
		if (!(backend instanceof ReleaseEvents events)) {
			return false;
		}
		String key = uniqueName();
		if (backend.tryAcquire(key, "probe", Duration.ofSeconds(5)).acquired()) {
			backend.release(key, "probe");
		}
		return events.announcesReleases();
	}

	@Test
	void interruptedWaiterStopsAndLeavesNoLease() throws Exception {
		LockTemplate first = newTemplate();
		DefaultLockTemplate second = newEngine(settings());
		String name = uniqueName();
		Lease held = first.acquire(name, null, free());
		AtomicReference<Throwable> failure = new AtomicReference<>();
		AtomicBoolean flagKept = new AtomicBoolean();
		CountDownLatch started = new CountDownLatch(1);
		Thread waiter = newThread(() -> {
			started.countDown();
			try {
				second.acquire(name, null, waitFor(Duration.ofSeconds(30))).close();
			}
			catch (RuntimeException ex) {
				failure.set(ex);
				flagKept.set(Thread.currentThread().isInterrupted());
			}
		});
		waiter.start();
		started.await();
		awaitParked(waiter);
		long interruptedAt = System.nanoTime();
		waiter.interrupt();
		waiter.join(5000);
		assertThat(Duration.ofNanos(System.nanoTime() - interruptedAt)).isLessThan(Duration.ofSeconds(2));
		assertThat(failure.get()).isInstanceOf(LockInterruptedException.class);
		assertThat(flagKept).isTrue();
		held.close();
		assertThat(second.heldLeases()).isEmpty();
		LockTemplate third = newTemplate();
		assertThat(third.tryAcquire(name, null, free())).isPresent().get().satisfies(Lease::close);
	}

	@Test
	void manyLeasesAreRenewedTogether() throws Exception {
		LockTemplate template = newTemplate();
		LockTemplate other = newTemplate();
		String name = uniqueName();
		List<Lease> leases = new ArrayList<>();
		for (int i = 0; i < 200; i++) {
			leases.add(template.acquire(name, i,
					LockOptions.defaults().leaseTime(Duration.ofMillis(900)).waitTime(FREE_LOCK_WAIT)));
		}
		assertThat(other.tryAcquire(name, 0, waitFor(Duration.ofSeconds(2))))
			.as("another client trying for two TTLs").isEmpty();
		for (int i = 0; i < 200; i += 37) {
			assertThat(other.tryAcquire(name, i, waitFor(Duration.ZERO))).isEmpty();
		}
		assertThat(leases).allMatch(Lease::isValid);
		leases.forEach(Lease::close);
	}

	/** Counts the losses a template reports: to {@link LockListener#leaseLost}, and to the holds' observations. */
	static final class LostLeases implements LockListener {

		private final AtomicInteger leaseLost = new AtomicInteger();

		private final AtomicInteger observedLost = new AtomicInteger();

		@Override
		public LockObservation acquiring(String name, String key, String backend) {
			return new LockObservation() {

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
				}

				@Override
				public void lost() {
					LostLeases.this.observedLost.incrementAndGet();
				}

				@Override
				public Observation hold() {
					return Observation.NOOP;
				}

				@Override
				public Observation.Scope openScope() {
					return Observation.Scope.NOOP;
				}

			};
		}

		@Override
		public void leaseLost(String name, String backend) {
			this.leaseLost.incrementAndGet();
		}

		/** How often {@code leaseLost} and an observation's {@code lost} were called, in that order. */
		List<Integer> reported() {
			return List.of(this.leaseLost.get(), this.observedLost.get());
		}

	}

}
