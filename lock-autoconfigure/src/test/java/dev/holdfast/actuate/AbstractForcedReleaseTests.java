package dev.holdfast.actuate;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.Show;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import dev.holdfast.Lease;
import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.actuate.ClusterLocksView.ClusterLockDescriptor;
import dev.holdfast.actuate.ClusterLocksView.ClusterLocksDescriptor;
import dev.holdfast.actuate.ClusterLocksView.ClusterPermitDescriptor;
import dev.holdfast.actuate.ClusterLocksView.ClusterSemaphoreDescriptor;
import dev.holdfast.actuate.ClusterLocksView.ForcedReleaseDescriptor;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.semaphore.PermitSlots;
import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.ClusterLocks.BackendLock;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

/**
 * An operator releases a lock by force through the {@code locks} endpoint of another instance:
 * the holder's next renewal fails, so it is told and counts the lock lost, and the next holder's
 * fencing token is larger. A subclass per backend gives independent clients of one server.
 */
@ExtendWith(OutputCaptureExtension.class)
abstract class AbstractForcedReleaseTests {

	private static final SecurityContext ALICE = new SecurityContext() {

		@Override
		public java.security.Principal getPrincipal() {
			return () -> "alice";
		}

		@Override
		public boolean isUserInRole(String role) {
			return true;
		}

	};

	private final List<DefaultLockTemplate> templates = new ArrayList<>();

	/** A new client of the backend under test, as another process would have. */
	protected abstract LockBackend newBackend();

	@AfterEach
	void closeTemplates() {
		this.templates.forEach(DefaultLockTemplate::close);
	}

	private DefaultLockTemplate template(String instance, LockMetricsListener listener) {
		DefaultLockTemplate template = new DefaultLockTemplate(newBackend(),
				LockSettings.defaults().withInstanceName(instance), listener);
		this.templates.add(template);
		return template;
	}

	@Test
	void forcedReleaseLosesTheHoldersLeaseAtItsNextRenewalAndTheNextHolderGetsALargerToken(CapturedOutput output) {
		SimpleMeterRegistry meters = new SimpleMeterRegistry();
		DefaultLockTemplate holder = template("web-1", new LockMetricsListener(meters));
		DefaultLockTemplate operator = template("web-2", new LockMetricsListener(new SimpleMeterRegistry()));
		LocksEndpoint endpoint = new LocksEndpoint(operator, "web-2", Show.NEVER, Set.of(), 100, null);
		String name = "report-" + UUID.randomUUID();
		Lease lease = holder.acquire(name, "2024-05", LockOptions.defaults().leaseTime(Duration.ofSeconds(1)));

		ClusterLocksDescriptor cluster = (ClusterLocksDescriptor) endpoint.scope(ALICE, "cluster");
		assertThat(cluster.supported()).isTrue();
		ClusterLockDescriptor listed = cluster.locks()
			.stream()
			.filter((lock) -> lock.fencingToken() == lease.fencingToken())
			.findFirst()
			.orElseThrow();
		assertThat(listed.instance()).isEqualTo("web-1");
		assertThat(listed.key()).as("masked as show-values says").matches("holdfast:" + name + ":\\*{6}#[0-9a-f]{4}");

		ForcedReleaseDescriptor answer = endpoint.release(ALICE, listed.key(), lease.fencingToken(), null);
		assertThat(answer.released()).as(String.valueOf(answer.reason())).isTrue();
		assertThat(output).contains("released by force by alice");

		await().atMost(Duration.ofSeconds(3)).until(() -> !lease.isValid());
		// The lease turns invalid first, then the loss is logged and counted: awaited, not read once.
		await().atMost(Duration.ofSeconds(3))
			.untilAsserted(() -> assertThat(meters
				.counter(LockMetricsListener.LOST, "name", name, "backend", holder.backendName(), "mode", "exclusive")
				.count()).as("counted lost").isEqualTo(1));
		assertThat(output).contains("lost");
		try (Lease next = operator.acquire(name, "2024-05", LockOptions.defaults())) {
			assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
		}
		lease.close();
	}

	@Test
	void aSemaphoreIsOneEntryWithItsPermitsHereAndInTheClusterView() {
		DefaultLockTemplate web1 = template("web-1", new LockMetricsListener(new SimpleMeterRegistry()));
		DefaultLockTemplate web2 = template("web-2", new LockMetricsListener(new SimpleMeterRegistry()));
		LocksEndpoint here = new LocksEndpoint(web1, "web-1", Show.NEVER, Set.of(), 100, null);
		String name = "exports-" + UUID.randomUUID();
		String semaphore = LockSettings.masked(web1.keyFor(name, "eu"), web1.keyPrefix());
		try (Lease first = web1.acquirePermit(name, "eu", 3, LockOptions.defaults());
				Lease second = web1.acquirePermit(name, "eu", 3, LockOptions.defaults());
				Lease third = web2.acquirePermit(name, "eu", 3, LockOptions.defaults());
				Lease lock = web1.acquire(name, "eu", LockOptions.defaults())) {
			assertThat(web2.tryAcquirePermit(name, "eu", 3, LockOptions.defaults())).as("a 4th of 3: checks slot #3")
				.isEmpty();
			LocksEndpoint.LocksDescriptor locks = here.locks(ALICE);
			assertThat(locks.leases()).as("the lock, no permit").extracting(LocksEndpoint.LeaseDescriptor::fencingToken)
				.containsExactly(lock.fencingToken());
			assertThat(locks.semaphores()).singleElement().satisfies((held) -> {
				assertThat(held.name()).isEqualTo(name);
				assertThat(held.key()).isEqualTo(semaphore).matches("holdfast:" + name + ":\\*{6}#[0-9a-f]{4}");
				assertThat(held.permits()).extracting(LocksEndpoint.PermitDescriptor::slot)
					.containsExactlyElementsOf(slots(first, second));
				assertThat(held.permits()).extracting(LocksEndpoint.PermitDescriptor::fencingToken)
					.containsExactlyInAnyOrder(first.fencingToken(), second.fencingToken());
				assertThat(held.permits()).allSatisfy((permit) -> {
					assertThat(permit.valid()).isTrue();
					assertThat(permit.key()).as("the semaphore's masked key and the slot")
						.isEqualTo(semaphore + "#" + permit.slot());
				});
			});

			ClusterLocksDescriptor cluster = (ClusterLocksDescriptor) here.scope(ALICE, "cluster");
			assertThat(cluster.locks()).as("the lock, no permit slot").extracting(ClusterLockDescriptor::fencingToken)
				.contains(lock.fencingToken())
				.doesNotContain(first.fencingToken(), second.fencingToken(), third.fencingToken());
			assertThat(cluster.locks()).extracting(ClusterLockDescriptor::key).noneMatch((key) -> key.contains("#-1"));
			assertThat(((ClusterLocks) web2.backend()).listLocks(web2.keyPrefix(), 10_000).locks())
				.as("the check slot #-1 (2 s lease) still held after the listing, so not listed there is no accident")
				.extracting(BackendLock::key)
				.contains(web2.keyFor(name, "eu") + "#-1");
			ClusterSemaphoreDescriptor listed = cluster.semaphores()
				.stream()
				.filter((entry) -> entry.key().equals(semaphore))
				.findFirst()
				.orElseThrow();
			assertThat(listed.permits()).as("by slot, the check slot #-1 not a permit")
				.extracting(ClusterPermitDescriptor::slot)
				.containsExactlyElementsOf(slots(first, second, third));
			assertThat(listed.permits()).extracting(ClusterPermitDescriptor::instance, ClusterPermitDescriptor::fencingToken)
				.containsExactlyInAnyOrderElementsOf(List.of(tuple("web-1", first.fencingToken()),
						tuple("web-1", second.fencingToken()),
						tuple("web-2", third.fencingToken())));
			assertThat(listed.permits()).allSatisfy((permit) -> assertThat(permit.remainingMillis()).isPositive());
		}
	}

	/** RWL-17, RWL-27, RWL-38: a read-held key is one lock, held by its live readers' count; OBS-16 here. */
	@Test
	void aReadHeldKeyIsListedOnceAsHeldByItsReadersAndHereAsAReadLease() {
		DefaultLockTemplate web1 = template("web-1", new LockMetricsListener(new SimpleMeterRegistry()));
		DefaultLockTemplate web2 = template("web-2", new LockMetricsListener(new SimpleMeterRegistry()));
		LocksEndpoint here = new LocksEndpoint(web1, "web-1", Show.NEVER, Set.of(), 100, null);
		String name = "prices-" + UUID.randomUUID();
		String key = LockSettings.masked(web1.keyFor(name, "eu"), web1.keyPrefix());
		LockOptions read = LockOptions.defaults().mode(LockMode.READ);
		try (Lease first = web1.acquire(name, "eu", read); Lease second = web2.acquire(name, "eu", read)) {
			assertThat(here.locks(ALICE).leases()).singleElement().satisfies((lease) -> {
				assertThat(lease.mode()).isEqualTo("read");
				assertThat(lease.holds()).isEqualTo(1);
			});
			ClusterLocksDescriptor cluster = (ClusterLocksDescriptor) here.scope(ALICE, "cluster");
			assertThat(cluster.locks()).filteredOn((lock) -> lock.key().equals(key))
				.singleElement()
				.satisfies((lock) -> {
					assertThat(lock.instance()).isEqualTo("2 readers");
					assertThat(lock.fencingToken()).isEqualTo(first.fencingToken()).isEqualTo(second.fencingToken());
					assertThat(lock.remainingMillis()).isPositive();
				});
		}
	}

	@Test
	void aPermitShownMaskedIsReleasedByForce() {
		DefaultLockTemplate holder = template("web-1", new LockMetricsListener(new SimpleMeterRegistry()));
		DefaultLockTemplate operator = template("web-2", new LockMetricsListener(new SimpleMeterRegistry()));
		LocksEndpoint endpoint = new LocksEndpoint(operator, "web-2", Show.NEVER, Set.of(), 100, null);
		String name = "exports-" + UUID.randomUUID();
		try (Lease permit = holder.acquirePermit(name, "eu", 2, LockOptions.defaults())) {
			String semaphore = LockSettings.masked(holder.keyFor(name, "eu"), holder.keyPrefix());
			ClusterPermitDescriptor listed = ((ClusterLocksDescriptor) endpoint.scope(ALICE, "cluster")).semaphores()
				.stream()
				.filter((entry) -> entry.key().equals(semaphore))
				.findFirst()
				.orElseThrow()
				.permits()
				.get(0);
			assertThat(listed.key()).isEqualTo(semaphore + "#" + PermitSlots.slotOf(permit.key()));
			ForcedReleaseDescriptor answer = endpoint.release(ALICE, listed.key(), permit.fencingToken(), null);
			assertThat(answer.released()).as(String.valueOf(answer.reason())).isTrue();
			List<ClusterSemaphoreDescriptor> left = ((ClusterLocksDescriptor) endpoint.scope(ALICE, "cluster"))
				.semaphores();
			assertThat((left != null) ? left : List.<ClusterSemaphoreDescriptor>of()).as("no permit of the semaphore listed")
				.noneMatch((entry) -> entry.key().equals(semaphore));
			try (Lease one = operator.acquirePermit(name, "eu", 2, LockOptions.defaults());
					Lease two = operator.acquirePermit(name, "eu", 2, LockOptions.defaults())) {
				assertThat(slots(one, two)).as("both slots free at once: the one released too").containsExactly(0, 1);
			}
		}
	}

	@Test
	void aMaskedPermitKeyIsRefusedWhenTheListingIsIncompleteOrSeveralHaveIt() {
		DefaultLockTemplate holder = template("web-1", new LockMetricsListener(new SimpleMeterRegistry()));
		DefaultLockTemplate operator = template("web-2", new LockMetricsListener(new SimpleMeterRegistry()));
		String name = "exports-" + UUID.randomUUID();
		// two semaphore keys with one masked form (a 16-bit fingerprint: a few hundred tries)
		Map<String, String> byMasked = new HashMap<>();
		String[] values = null;
		for (int i = 0; values == null; i++) {
			String other = byMasked.putIfAbsent(masked(holder, name, "v" + i), "v" + i);
			values = (other != null) ? new String[] { other, "v" + i } : null;
		}
		String key = masked(holder, name, values[0]);
		try (Lease first = holder.acquirePermit(name, values[0], 1, LockOptions.defaults());
				Lease second = holder.acquirePermit(name, values[1], 1, LockOptions.defaults())) {
			LocksEndpoint whole = new LocksEndpoint(operator, "web-2", Show.NEVER, Set.of(), 100, null);
			ForcedReleaseDescriptor several = whole.release(ALICE, key, null, null);
			assertThat(several.released()).isFalse();
			assertThat(several.reason()).startsWith("Several locks listed have this masked key");

			LocksEndpoint capped = new LocksEndpoint(operator, "web-2", Show.NEVER, Set.of(), 1, null);
			assertThat(((ClusterLocksDescriptor) capped.scope(ALICE, "cluster")).complete()).isFalse();
			ForcedReleaseDescriptor incomplete = capped.release(ALICE, masked(holder, name, values[1]), null, null);
			assertThat(incomplete.released()).isFalse();
			assertThat(incomplete.reason()).contains("incomplete", "show-values", "fencingToken");
			assertThat(operator.tryAcquirePermit(name, values[0], 1, LockOptions.defaults())).as("still held").isEmpty();
			assertThat(operator.tryAcquirePermit(name, values[1], 1, LockOptions.defaults())).as("still held").isEmpty();

		}
	}

	private static String masked(DefaultLockTemplate template, String name, String value) {
		return LockSettings.masked(template.keyFor(name, value), template.keyPrefix()) + "#0";
	}

	private static List<Integer> slots(Lease... permits) {
		return Arrays.stream(permits)
			.map((permit) -> PermitSlots.slotOf(permit.key()))
			.sorted()
			.toList();
	}

	@Test
	void forcedReleaseOfALockTakenByAnotherHolderSinceItWasListedLeavesItAlone() {
		DefaultLockTemplate holder = template("web-1", new LockMetricsListener(new SimpleMeterRegistry()));
		DefaultLockTemplate operator = template("web-2", new LockMetricsListener(new SimpleMeterRegistry()));
		LocksEndpoint endpoint = new LocksEndpoint(operator, "web-2", Show.ALWAYS, Set.of(), 100, null);
		try (Lease lease = holder.acquire("nightly-" + UUID.randomUUID(), null, LockOptions.defaults())) {
			ForcedReleaseDescriptor answer = endpoint.release(ALICE, lease.key(), lease.fencingToken() - 1, null);
			assertThat(answer.released()).isFalse();
			assertThat(lease.isValid()).isTrue();
		}
	}

}
