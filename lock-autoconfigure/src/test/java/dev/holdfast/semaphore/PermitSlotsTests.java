package dev.holdfast.semaphore;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterEach;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockInterruptedException;
import dev.holdfast.LockNotAcquiredException;
import dev.holdfast.LockOptions;
import dev.holdfast.PermitNotAcquiredException;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockKeys;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * {@link PermitSlots} on the memory backend's engine: a semaphore of N permits is N slot leases;
 * at most N are held, each permit is its own lease, a freed slot is found, disagreeing permits
 * fail the call.
 */
class PermitSlotsTests {

	private static final LockOptions NOW = LockOptions.defaults().waitTime(Duration.ZERO);

	/** For a permit just given back: its release may still be in flight. */
	private static final LockOptions SOON = LockOptions.defaults().waitTime(Duration.ofSeconds(2));

	private final RecordingBackend backend = new RecordingBackend();

	private final List<DefaultLockTemplate> templates = new ArrayList<>();

	private final DefaultLockTemplate template = instance();

	@AfterEach
	void close() {
		this.templates.forEach(DefaultLockTemplate::close);
	}

	@Test
	void atMostPermitsAreHeldAndAFreedOneIsTakenAgain() {
		List<Lease> held = new ArrayList<>();
		for (int i = 0; i < 3; i++) {
			held.add(this.template.acquirePermit("exports", null, 3, NOW));
		}
		assertThat(held).extracting(Lease::key)
			.containsExactlyInAnyOrder("exports#0", "exports#1", "exports#2");
		assertThat(instance().tryAcquirePermit("exports", null, 3, NOW)).as("a fourth permit of 3").isEmpty();
		held.get(1).close();
		try (Lease again = instance().acquirePermit("exports", null, 3, SOON)) {
			assertThat(again.key()).isEqualTo(held.get(1).key());
		}
		held.forEach(Lease::close);
	}

	@Test
	void permitsAreNotReentrantEachCallTakesItsOwn() {
		try (Lease first = this.template.acquirePermit("exports", "t1", 2, NOW);
				Lease second = this.template.acquirePermit("exports", "t1", 2, NOW)) {
			assertThat(first.key()).isNotEqualTo(second.key());
			assertThat(first.fencingToken()).isPositive();
			assertThat(second.fencingToken()).isPositive();
			assertThat(this.template.tryAcquirePermit("exports", "t1", 2, NOW)).as("a third permit of 2, same thread")
				.isEmpty();
		}
	}

	@Test
	void executeWithPermitRunsTheActionUnderAPermitAndGivesItBack() {
		String ran = this.template.executeWithPermit("exports", "t1", 1, NOW, () -> {
			assertThat(instance().tryAcquirePermit("exports", "t1", 1, NOW)).as("while the action runs").isEmpty();
			return "ran";
		});
		assertThat(ran).isEqualTo("ran");
		assertThat(instance().tryAcquirePermit("exports", "t1", 1, SOON)).as("after").isPresent().get()
			.satisfies(Lease::close);
	}

	@Test
	void aFreeSemaphoreGivesAPermitInOneBackendCall() {
		try (Lease permit = this.template.acquirePermit("exports", "t1", 5, NOW)) {
			assertThat(this.backend.acquisitions).containsExactly(permit.key());
		}
	}

	@Test
	void aWaitingCallTakesThePermitOfWhicheverSlotIsReleased() throws Exception {
		List<Lease> held = new ArrayList<>();
		for (int i = 0; i < 3; i++) {
			held.add(this.template.acquirePermit("exports", null, 3, NOW));
		}
		DefaultLockTemplate other = instance();
		for (Lease released : held) {
			this.backend.acquisitions.clear();
			CompletableFuture<Lease> waiting = CompletableFuture.supplyAsync(() -> other.acquirePermit("exports", null,
					3, LockOptions.defaults().waitTime(Duration.ofSeconds(10))));
			await().atMost(Duration.ofSeconds(5))
				.until(() -> this.backend.acquisitions.containsAll(List.of("exports#0", "exports#1", "exports#2")));
			int before = this.backend.acquisitions.size();
			await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> !waiting.isDone());
			// rounds of 100-200 ms (the poll interval): each tries 3 slots and waits on one (about 6 attempts)
			assertThat(this.backend.acquisitions.size() - before).as("attempts while waiting 500 ms, no busy loop")
				.isBetween(3, 60);
			long releasedAt = System.nanoTime();
			released.close();
			Lease taken = waiting.get(5, TimeUnit.SECONDS);
			assertThat(taken.key()).isEqualTo(released.key());
			assertThat(Duration.ofNanos(System.nanoTime() - releasedAt)).as("time to find the released slot")
				.isLessThan(Duration.ofSeconds(2));
			held.set(held.indexOf(released), taken);
		}
		held.forEach(Lease::close);
	}

	@Test
	void aWaitingCallTriesTheSlotItWaitsOnOnlyWithItsWait() {
		try (Lease held = instance().acquirePermit("exports", null, 1, NOW)) {
			this.backend.acquisitions.clear();
			this.backend.attemptNanos.clear();
			assertThat(this.template.tryAcquirePermit("exports", null, 1,
					LockOptions.defaults().waitTime(Duration.ofMillis(400)))).isEmpty();
			List<Long> attempts = new ArrayList<>();
			for (int i = 0; i < this.backend.acquisitions.size(); i++) {
				if (this.backend.acquisitions.get(i).equals("exports#0")) {
					attempts.add(this.backend.attemptNanos.get(i));
				}
			}
			// before: the scan's refusal, then at once the wait's first attempt on the same slot
			assertThat(Duration.ofNanos(attempts.get(1) - attempts.get(0))).as("between the first two tries of #0")
				.isGreaterThanOrEqualTo(Duration.ofMillis(20));
		}
	}

	@Test
	void noPermitWithinTheWaitTimeThrowsNamingTheSemaphoreAndItsPermits() {
		try (Lease held = this.template.acquirePermit("exports", "t1", 1, NOW)) {
			assertThatThrownBy(() -> instance().acquirePermit("exports", "t1", 1,
					LockOptions.defaults().waitTime(Duration.ofMillis(300))))
				.isInstanceOf(PermitNotAcquiredException.class)
				.isInstanceOf(LockNotAcquiredException.class)
				.hasMessageContaining("Semaphore 'exports:")
				.hasMessageContaining("all its 1 permits held by other owners")
				.hasMessageContaining("PT0.3S");
			Optional<String> ran = instance().tryExecuteLocked("exports", "t1", NOW, () -> "a lock of the same name");
			assertThat(ran).as("a lock of the semaphore's name and key is another lock").isPresent();
		}
	}

	@Test
	void aPermitBeyondThisCallsNumberHeldFailsTheCallNamingTheFix() {
		List<Lease> held = new ArrayList<>();
		for (int i = 0; i < 3; i++) {
			held.add(instance().acquirePermit("exports", null, 3, NOW));
		}
		assertThatIllegalStateException().isThrownBy(() -> this.template.tryAcquirePermit("exports", null, 2, NOW))
			.withMessageContaining("slot #2 held, beyond the 2 permits")
			.withMessageContaining("a permits change in a rolling deploy")
			.withMessageContaining("Give every instance the same permits");
		held.forEach(Lease::close);
	}

	@Test
	void callsThatAgreeNeverSeeADisagreementWhileTheyCheck() throws Exception {
		// a check that gave slot #1 back slowly: without the check slot, the next check found it held
		this.backend.slowReleases.add("exports#1");
		callsThatAgreeNeverSeeADisagreement();
	}

	@Test
	void callsThatAgreeNeverSeeADisagreementWhenTheReleaseOfSlotNFailed() throws Exception {
		// retried at once, after 100 ms, then 200 ms: a check slot released at once let the next check find #1 held
		this.backend.failedReleases.put("exports#1", new AtomicInteger(3));
		callsThatAgreeNeverSeeADisagreement();
	}

	private void callsThatAgreeNeverSeeADisagreement() throws Exception {
		List<Lease> held = new ArrayList<>();
		held.add(this.template.acquirePermit("exports", null, 1, NOW));
		List<CompletableFuture<Optional<Lease>>> calls = new ArrayList<>();
		for (int i = 0; i < 6; i++) {
			DefaultLockTemplate other = instance();
			calls.add(CompletableFuture.supplyAsync(() -> other.tryAcquirePermit("exports", null, 1,
					LockOptions.defaults().waitTime(Duration.ofMillis(400)))));
		}
		for (CompletableFuture<Optional<Lease>> call : calls) {
			assertThat(call.get(5, TimeUnit.SECONDS)).isEmpty();
		}
		held.forEach(Lease::close);
	}

	@Test
	void anInterruptedWaitEndsTheCallHoldingNothing() throws Exception {
		try (Lease held = instance().acquirePermit("exports", null, 1, NOW)) {
			DefaultLockTemplate waiter = instance();
			CompletableFuture<Throwable> ended = new CompletableFuture<>();
			this.backend.acquisitions.clear();
			Thread thread = new Thread(() -> {
				try (Lease permit = waiter.acquirePermit("exports", null, 1, LockOptions.defaults()
					.waitTime(Duration.ofSeconds(10)))) {
					ended.complete(null);
				}
				catch (Throwable ex) {
					ended.complete(ex);
				}
			});
			thread.start();
			await().atMost(Duration.ofSeconds(5)).until(() -> this.backend.acquisitions.contains("exports#1"));
			thread.interrupt();
			assertThat(ended.get(5, TimeUnit.SECONDS)).isInstanceOf(LockInterruptedException.class);
			assertThat(waiter.heldLeases()).as("held by the interrupted caller").isEmpty();
		}
	}

	@Test
	void aBackendFailureInTheMiddleOfAScanFailsTheCallHoldingNothing() {
		List<Lease> held = new ArrayList<>();
		held.add(instance().acquirePermit("exports", null, 3, NOW));
		held.add(instance().acquirePermit("exports", null, 3, NOW));
		String free = List.of("exports#0", "exports#1", "exports#2").stream()
			.filter((key) -> held.stream().noneMatch((lease) -> lease.key().equals(key)))
			.findFirst()
			.orElseThrow();
		this.backend.failedAcquisitions.add(free);
		assertThatThrownBy(() -> this.template.tryAcquirePermit("exports", null, 3, NOW))
			.isInstanceOf(LockBackendException.class);
		assertThat(this.template.heldLeases()).isEmpty();
		this.backend.failedAcquisitions.clear();
		assertThat(this.template.tryAcquirePermit("exports", null, 3, NOW)).as("once the backend answers").get()
			.satisfies((permit) -> assertThat(permit.key()).isEqualTo(free))
			.satisfies(Lease::close);
		held.forEach(Lease::close);
	}

	@Test
	void anEngineGivingOneSemaphoreOtherPermitsFailsAtItsFirstCall() {
		try (Lease permit = this.template.acquirePermit("exports", "t1", 2, NOW)) {
			assertThatIllegalArgumentException()
				.isThrownBy(() -> this.template.tryAcquirePermit("exports", "t1", 3, NOW))
				.withMessageContaining("Semaphore 'exports:").withMessageContaining("is given 3 permits here, but 2 by an earlier call")
				.withMessageContaining("the same permits");
			assertThat(this.template.tryAcquirePermit("exports", "t2", 3, NOW)).as("another key").isPresent().get()
				.satisfies(Lease::close);
		}
	}

	@Test
	void aPassedCheckIsMadeOncePerCheckSlotLease() {
		try (Lease held = instance().acquirePermit("exports", null, 1, NOW)) {
			for (int i = 0; i < 3; i++) {
				assertThat(this.template.tryAcquirePermit("exports", null, 1, NOW)).isEmpty();
			}
			assertThat(this.backend.acquisitions).filteredOn("exports#1"::equals).as("checks of slot #1").hasSize(1);
			assertThat(this.backend.acquisitions).filteredOn("exports#-1"::equals).as("takes of the check slot")
				.hasSize(1);
		}
	}

	@Test
	void aPermitIsNeverAReentrantHoldOfTheSlotItsThreadHolds() {
		DefaultLockTemplate naming = new DefaultLockTemplate(this.backend, LockSettings.defaults().withKeyPrefix("")) {

			@Override
			public String keyFor(String name, @Nullable Object key) {
				// a lock whose key is the slot's, as LockKeys.Slot once let a caller name it
				return "slot".equals(key) ? "exports#0" : super.keyFor(name, key);
			}

		};
		this.templates.add(naming);
		try (Lease lock = naming.acquire("exports", "slot", NOW)) {
			assertThat(lock.key()).isEqualTo("exports#0");
			assertThat(naming.tryAcquirePermit("exports", null, 1, NOW)).as("a permit of the one slot, held as a lock")
				.isEmpty();
		}
		assertThat(naming.tryAcquirePermit("exports", null, 1, SOON)).isPresent().get().satisfies(Lease::close);
	}

	@Test
	void permitsOutOfRangeAreRefusedNamingTheRange() {
		assertThatIllegalArgumentException().isThrownBy(() -> this.template.acquirePermit("exports", null, 0, NOW))
			.withMessageContaining("give it 1 to 64 permits");
		assertThatIllegalArgumentException().isThrownBy(() -> this.template.tryAcquirePermit("exports", null, 65, NOW))
			.withMessageContaining("asks for 65 permits");
	}

	@Test
	void slotKeysCannotMeetTheKeyOfALock() {
		LockKeys keys = new LockKeys("app:", 80);
		assertThat(keys.encodeSlot("exports", null, 0)).isEqualTo("app:exports#0");
		assertThat(keys.encode("exports#0", null)).isEqualTo("app:exports%230");
		assertThat(keys.encodeSlot("exports", "t1", 2)).isEqualTo("app:exports:t1#2");
		assertThat(keys.encode("exports", "t1#2")).isEqualTo("app:exports:t1%232");
		String longKey = "x".repeat(100);
		assertThat(keys.encodeSlot("exports", longKey, 1))
			.isNotEqualTo(keys.encodeSlot("exports", longKey, 2))
			.isNotEqualTo(keys.encode("exports", longKey + "#1"))
			.hasSizeLessThanOrEqualTo(80);
	}

	private DefaultLockTemplate instance() {
		DefaultLockTemplate instance = new DefaultLockTemplate(this.backend,
				LockSettings.defaults().withKeyPrefix("").withPollInterval(Duration.ofMillis(100)));
		this.templates.add(instance);
		return instance;
	}

	/** The memory backend, recording the keys it was asked to take. */
	static class RecordingBackend extends InMemoryLockBackend {

		final List<String> acquisitions = new CopyOnWriteArrayList<>();

		/** Keys whose releases take 300 ms. */
		final Set<String> slowReleases = ConcurrentHashMap.newKeySet();

		/** Keys whose next releases fail, how many times. */
		final Map<String, AtomicInteger> failedReleases = new ConcurrentHashMap<>();

		/** Keys whose acquisitions fail. */
		final Set<String> failedAcquisitions = ConcurrentHashMap.newKeySet();

		/** When each of the {@link #acquisitions} was made (a single caller's: in the same order). */
		final List<Long> attemptNanos = new CopyOnWriteArrayList<>();

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			this.attemptNanos.add(System.nanoTime());
			this.acquisitions.add(key);
			if (this.failedAcquisitions.contains(key)) {
				throw new IllegalStateException("injected: the acquisition of " + key + " failed");
			}
			return super.tryAcquire(key, owner, ttl);
		}

		@Override
		public boolean release(String key, String owner) {
			AtomicInteger failures = this.failedReleases.get(key);
			if (failures != null && failures.getAndDecrement() > 0) {
				throw new IllegalStateException("injected: the release of " + key + " failed");
			}
			if (this.slowReleases.contains(key)) {
				try {
					Thread.sleep(300);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
			}
			return super.release(key, owner);
		}

	}

}
