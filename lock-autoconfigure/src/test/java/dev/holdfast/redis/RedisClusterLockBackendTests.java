package dev.holdfast.redis;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.data.redis.connection.RedisConnectionFactory;

import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.AsyncLockBackend;
import dev.holdfast.spi.ClusterLocks;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.test.server.RedisCluster;
import dev.holdfast.test.server.RedisServer;

import static dev.holdfast.spi.TickClaims.TickClaim.Outcome.CLAIMED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The backend on a real Redis Cluster of 3 primaries with one replica each (started once per
 * JVM): a lock held past its lease time, keys on every primary, renewal of locks spread over many
 * slots, a slot migrated while locks in it are held, release announcements and tick claims. A
 * subclass per client library; the shared contract runs in holdfast-test's
 * {@code RedisClusterContractTests} and {@code JedisRedisClusterContractTests}.
 */
abstract class RedisClusterLockBackendTests {

	/** A tolerance under which any tick is due: these tests are about the record. */
	private static final Duration ANY_TIME = Duration.ofDays(36500);


	private static final Duration FREE_LOCK_WAIT = Duration.ofSeconds(5);

	// Backends and templates close after each test; their connection factories close with the
	// class, after every release has gone through.
	private static final List<RedisConnectionFactory> factories = new ArrayList<>();

	private final List<AutoCloseable> closeAfterTest = new ArrayList<>();

	static RedisCluster cluster() {
		return RedisCluster.shared();
	}

	@AfterEach
	void closeTemplatesAndBackends() throws Exception {
		// Templates (added after their backends) first: they release their leases.
		for (int i = this.closeAfterTest.size() - 1; i >= 0; i--) {
			this.closeAfterTest.get(i).close();
		}
	}

	@AfterAll
	static void closeFactories() throws Exception {
		for (RedisConnectionFactory factory : factories) {
			((DisposableBean) factory).destroy();
		}
		factories.clear();
	}

	/** A new, started connection factory of the client library under test, on {@link #cluster()}. */
	protected abstract RedisConnectionFactory createFactory();

	private RedisLockBackend newBackend() {
		RedisLockBackend backend = RedisLockBackend.of(newFactory(), RedisLockBackend.DEFAULT_CHANNEL);
		this.closeAfterTest.add(backend);
		return backend;
	}

	private DefaultLockTemplate newTemplate() {
		DefaultLockTemplate template = new DefaultLockTemplate(newBackend(),
				LockSettings.defaults().withPollInterval(Duration.ofMillis(200)));
		this.closeAfterTest.add(template);
		return template;
	}

	protected final RedisConnectionFactory newFactory() {
		RedisConnectionFactory factory = createFactory();
		factories.add(factory);
		return factory;
	}

	@Test
	void clusterFactoriesGiveTheBlockingBackend() {
		assertThat(newBackend()).isNotInstanceOf(AsyncLockBackend.class);
	}

	@Test
	void lockHeldForThreeLeaseTimesKeepsASecondInstanceOut() {
		DefaultLockTemplate first = newTemplate();
		DefaultLockTemplate second = newTemplate();
		// long enough that a renewal delayed by a loaded machine (seen with 500 ms) still lands in time
		Duration leaseTime = Duration.ofMillis(1500);
		String name = "cluster-" + UUID.randomUUID();
		try (Lease lease = first.acquire(name, null, LockOptions.defaults().leaseTime(leaseTime))) {
			long start = System.nanoTime();
			Optional<Lease> intruder = second.tryAcquire(name, null,
					LockOptions.defaults().leaseTime(leaseTime).waitTime(leaseTime.multipliedBy(3)));
			assertThat(intruder).as("a second instance trying for 3 lease times").isEmpty();
			assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(leaseTime.multipliedBy(3));
			assertThat(lease.isValid()).as("the holder's lease, renewed").isTrue();
		}
		assertThat(second.tryAcquire(name, null, LockOptions.defaults().waitTime(FREE_LOCK_WAIT))).isPresent()
			.get()
			.satisfies(Lease::close);
	}

	@Test
	void locksLiveOnEveryPrimary() {
		RedisLockBackend holder = newBackend();
		RedisLockBackend other = newBackend();
		Map<Integer, String> primaryBySlot = new LinkedHashMap<>();
		Set<String> primaries = new HashSet<>();
		// At least 30 locks, until they are on every primary.
		for (int i = 0; i < 30 || primaries.size() < 3; i++) {
			String key = "cluster-spread:" + UUID.randomUUID();
			assertThat(holder.tryAcquire(key, "owner", Duration.ofSeconds(10)).acquired()).isTrue();
			assertThat(other.tryAcquire(key, "other", Duration.ofSeconds(10)).acquired()).isFalse();
			int slot = RedisCluster.slot("{" + key + "}");
			primaries.add(primaryBySlot.computeIfAbsent(slot, (s) -> cluster().primaryOf(s).address()));
			assertThat(cluster().primaryOf(slot).command("EXISTS", "{" + key + "}", "{" + key + "}:fence"))
				.as("lock and fencing counter on the primary of slot %d", slot)
				.isEqualTo(2L);
			assertThat(holder.release(key, "owner")).isTrue();
		}
		assertThat(primaries).as("primaries that held locks").hasSize(3);
	}

	@Test
	void renewalSendsOneScriptCallPerSlot() {
		RedisLockBackend backend = newBackend();
		RedisLockBackend other = newBackend();
		String prefix = "cluster-renew:" + UUID.randomUUID();
		List<HeldLock> locks = new ArrayList<>();
		Set<String> expected = new HashSet<>();
		Set<Integer> slots = new HashSet<>();
		for (int i = 0; i < 500; i++) {
			String key = prefix + ":" + i;
			if (i % 50 == 3) {
				other.tryAcquire(key, "thief", Duration.ofSeconds(10));
			}
			else {
				assertThat(backend.tryAcquire(key, "owner-" + i, Duration.ofSeconds(10)).acquired()).isTrue();
				expected.add(key);
			}
			slots.add(RedisCluster.slot("{" + key + "}"));
			locks.add(new HeldLock(key, "owner-" + i, Duration.ofMinutes(5)));
		}
		long before = scriptCalls();
		assertThat(backend.renew(locks)).isEqualTo(expected);
		assertThat(scriptCalls() - before).as("script calls for %d locks in %d slots", locks.size(), slots.size())
			.isEqualTo(slots.size());
		RedisServer node = cluster().primaryOf(RedisCluster.slot("{" + prefix + ":0}"));
		assertThat((Long) node.command("PTTL", "{" + prefix + ":0}")).isBetween(290_000L, 300_000L);
		RedisServer thiefNode = cluster().primaryOf(RedisCluster.slot("{" + prefix + ":3}"));
		assertThat((Long) thiefNode.command("PTTL", "{" + prefix + ":3}")).isBetween(1L, 10_000L);
	}

	@Test
	void readHoldsLiveOnEveryPrimaryAndAreRenewedPerSlot() {
		RedisLockBackend readers = newBackend();
		RedisLockBackend others = newBackend();
		String prefix = "cluster-read:" + UUID.randomUUID();
		List<HeldLock> holds = new ArrayList<>();
		Set<String> expected = new HashSet<>();
		Set<Integer> slots = new HashSet<>();
		Set<String> primaries = new HashSet<>();
		for (int i = 0; i < 60; i++) {
			String key = prefix + ":" + i;
			assertThat(readers.tryAcquireShared(key, "r1", Duration.ofSeconds(10), Duration.ZERO).acquired()).isTrue();
			assertThat(others.tryAcquireShared(key, "r2", Duration.ofSeconds(10), Duration.ZERO).acquired()).isTrue();
			assertThat(others.tryAcquire(key, "w", Duration.ofSeconds(10)).acquired()).isFalse();
			int slot = RedisCluster.slot("{" + key + "}");
			slots.add(slot);
			primaries.add(cluster().primaryOf(slot).address());
			holds.add(new HeldLock(key, "r1", Duration.ofMinutes(5)));
			expected.add(key);
		}
		assertThat(primaries).as("primaries that hold read locks").hasSize(3);
		assertThat(readers.release(prefix + ":0", "r1")).isTrue();
		expected.remove(prefix + ":0");
		// Every primary has the script (the first call to a node may be refused NOSCRIPT, then sent in full).
		readers.renewShared(holds);
		long before = scriptCalls();
		assertThat(readers.renewShared(holds)).isEqualTo(expected);
		assertThat(scriptCalls() - before).as("script calls for %d holds in %d slots", holds.size(), slots.size())
			.isEqualTo(slots.size());
		String key = prefix + ":1";
		RedisServer node = cluster().primaryOf(RedisCluster.slot("{" + key + "}"));
		assertThat((Long) node.command("PTTL", "{" + key + "}")).isBetween(290_000L, 300_000L);
		ClusterLocks.BackendLock lock = readers.lock(key);
		assertThat(lock).isNotNull();
		assertThat(lock.instance()).isEqualTo("2 readers");
		assertThat(readers.forceRelease(key, null)).isTrue();
		assertThat(others.release(key, "r2")).as("the group ended").isFalse();
		assertThat(others.tryAcquire(key, "w", Duration.ofSeconds(10)).acquired()).isTrue();
	}

	@Test
	void readHoldsOfASlotHalfMovedAreRenewedOneByOne() {
		RedisLockBackend readers = newBackend();
		String moved = "cluster-read-move:" + UUID.randomUUID();
		int slot = RedisCluster.slot("{" + moved + "}");
		String stays;
		do {
			stays = "cluster-read-move:" + UUID.randomUUID();
		}
		while (RedisCluster.slot("{" + stays + "}") != slot);
		for (String key : List.of(moved, stays)) {
			assertThat(readers.tryAcquireShared(key, "r", Duration.ofSeconds(10), Duration.ZERO).acquired()).isTrue();
		}
		RedisServer source = cluster().primaryOf(slot);
		RedisServer target = cluster().primaries().stream().filter((node) -> node != source).findFirst().orElseThrow();
		String slotText = Integer.toString(slot);
		target.command("CLUSTER", "SETSLOT", slotText, "IMPORTING", cluster().id(source));
		source.command("CLUSTER", "SETSLOT", slotText, "MIGRATING", cluster().id(target));
		// One hold's keys moved, the other's not: a call over both is refused (TRYAGAIN).
		source.command("MIGRATE", "127.0.0.1", Integer.toString(target.port()), "", "0", "5000", "KEYS",
				"{" + moved + "}", "{" + moved + "}:fence", "{" + moved + "}:readers");
		List<HeldLock> holds = List.of(new HeldLock(moved, "r", Duration.ofMinutes(5)),
				new HeldLock(stays, "r", Duration.ofMinutes(5)));
		assertThat(readers.renewShared(holds)).containsExactlyInAnyOrder(moved, stays);
		cluster().migrateSlot(slot, target, 100, () -> {
		});
		assertThat(readers.renewShared(holds)).containsExactlyInAnyOrder(moved, stays);
		assertThat((Long) target.command("PTTL", "{" + stays + "}")).isBetween(290_000L, 300_000L);
	}

	@Test
	void renewalSendsTheScriptAgainToNodesThatForgotIt() {
		RedisLockBackend backend = newBackend();
		String prefix = "cluster-noscript:" + UUID.randomUUID();
		List<HeldLock> locks = new ArrayList<>();
		for (int i = 0; i < 50; i++) {
			String key = prefix + ":" + i;
			assertThat(backend.tryAcquire(key, "owner", Duration.ofSeconds(10)).acquired()).isTrue();
			locks.add(new HeldLock(key, "owner", Duration.ofMinutes(5)));
		}
		// Redis forgot the scripts (as after a restart): they are sent again.
		cluster().primaries().forEach((node) -> node.command("SCRIPT", "FLUSH"));
		assertThat(backend.renew(locks)).hasSize(50);
		RedisServer node = cluster().primaryOf(RedisCluster.slot("{" + prefix + ":0}"));
		assertThat((Long) node.command("PTTL", "{" + prefix + ":0}")).isBetween(290_000L, 300_000L);
	}

	@Test
	void slotMigratedWhileItsLocksAreHeldKeepsThemExclusive() throws Exception {
		DefaultLockTemplate holder = newTemplate();
		DefaultLockTemplate other = newTemplate();
		String name = "cluster-migrate";
		String first = name + ":" + UUID.randomUUID();
		int slot = RedisCluster.slot("{" + holder.keyFor(first, null) + "}");
		List<String> names = new ArrayList<>(List.of(first));
		while (names.size() < 6) {
			String candidate = name + ":" + UUID.randomUUID();
			if (RedisCluster.slot("{" + holder.keyFor(candidate, null) + "}") == slot) {
				names.add(candidate);
			}
		}
		// Long enough that renewals, one key at a time while the slot is split, keep up on a loaded
		// machine.
		Duration leaseTime = Duration.ofSeconds(2);
		LockOptions options = LockOptions.defaults().leaseTime(leaseTime).waitTime(FREE_LOCK_WAIT);
		List<Lease> leases = new ArrayList<>();
		for (String lockName : names) {
			leases.add(holder.acquire(lockName, null, options));
		}
		RedisServer source = cluster().primaryOf(slot);
		RedisServer target = cluster().primaries().stream().filter((node) -> node != source).findFirst().orElseThrow();
		List<String> intrusions = new ArrayList<>();
		Runnable intrude = () -> {
			for (String lockName : names) {
				try {
					other.tryAcquire(lockName, null, LockOptions.defaults().waitTime(Duration.ZERO))
						.ifPresent((lease) -> {
							intrusions.add(lockName);
							lease.close();
						});
				}
				catch (LockBackendException ex) {
					// TRYAGAIN while a lock and its counter are on different nodes: not acquired.
				}
			}
		};
		// One key per MIGRATE: clients meet the slot half moved (ASK, TRYAGAIN) after each.
		cluster().migrateSlot(slot, target, 1, intrude);
		assertThat(cluster().primaryOf(slot)).isSameAs(target);
		// A lease time later, renewed on the new node (MOVED), the holder still holds all.
		assertThat(other.tryAcquire(first, null, LockOptions.defaults().waitTime(leaseTime)))
			.isEmpty();
		intrude.run();
		assertThat(intrusions).as("locks taken by another client during or after the migration").isEmpty();
		assertThat(leases).allMatch(Lease::isValid);
		leases.forEach(Lease::close);
		assertThat(other.tryAcquire(first, null, LockOptions.defaults().waitTime(FREE_LOCK_WAIT))).isPresent()
			.get()
			.satisfies(Lease::close);
	}

	@Test
	void fencingTokensIncreaseAndReservationsAreAnnouncedOnCluster() throws Exception {
		RedisLockBackend listening = newBackend();
		RedisLockBackend releasing = newBackend();
		BlockingQueue<String> received = new LinkedBlockingQueue<>();
		String key = "cluster-test:" + UUID.randomUUID();
		// The channel is the cluster's: other tests' releases may still be on their way.
		listening.subscribe((released) -> {
			if (released.equals(key)) {
				received.add(released);
			}
		});
		await().atMost(Duration.ofSeconds(10)).until(listening::isListening);
		long last = 0;
		for (int i = 0; i < 20; i++) {
			AcquireResult result = releasing.tryAcquire(key, "owner-" + i, Duration.ofSeconds(10));
			assertThat(result.fencingToken()).isGreaterThan(last);
			last = result.fencingToken();
			// A waiting attempt is refused and recorded: the release reserves the lock for it and announces it.
			assertThat(listening.tryAcquireWaiting(key, "waiter-" + i, Duration.ofSeconds(10), Duration.ofSeconds(5))
				.acquired()).isFalse();
			assertThat(releasing.release(key, "owner-" + i)).isTrue();
			assertThat(received.poll(5, TimeUnit.SECONDS)).isEqualTo(key);
			AcquireResult claim = listening.tryAcquireWaiting(key, "waiter-" + i, Duration.ofSeconds(10),
					Duration.ofSeconds(5));
			assertThat(claim.acquired()).as("the reserved waiter's claim").isTrue();
			assertThat(claim.fencingToken()).isGreaterThan(last);
			last = claim.fencingToken();
			assertThat(listening.release(key, "waiter-" + i)).isTrue();
		}
	}

	@Test
	void ticksOfJobsOnEveryPrimaryAreClaimedOnce() throws Exception {
		List<RedisLockBackend> clients = List.of(newBackend(), newBackend(), newBackend());
		Instant tick = Instant.parse("2030-01-01T00:00:00Z");
		Set<String> primaries = new HashSet<>();
		ExecutorService pool = Executors.newFixedThreadPool(clients.size());
		try {
			// At least 12 jobs, until their records are on every primary.
			for (int job = 0; job < 12 || primaries.size() < 3; job++) {
				String key = "cluster-job:" + UUID.randomUUID();
				primaries.add(cluster().primaryOf(RedisCluster.slot("{" + key + "}:tick")).address());
				for (int round = 0; round < 3; round++) {
					Instant claimed = tick.plusSeconds(round);
					List<Callable<Boolean>> claims = new ArrayList<>();
					for (RedisLockBackend client : clients) {
						claims.add(() -> client.claimTick(key, claimed, ANY_TIME, Duration.ofSeconds(10)).outcome() == CLAIMED);
					}
					int winners = 0;
					for (Future<Boolean> claim : pool.invokeAll(claims)) {
						winners += claim.get() ? 1 : 0;
					}
					assertThat(winners).as("winners of tick %s of %s", claimed, key).isOne();
					assertThat(clients.get(0).claimTick(key, claimed.minusSeconds(1), ANY_TIME, Duration.ofSeconds(10)).outcome() == CLAIMED)
						.as("an earlier tick")
						.isFalse();
				}
			}
		}
		finally {
			pool.shutdownNow();
		}
		assertThat(primaries).hasSize(3);
	}

	/** EVALSHA and EVAL calls so far, summed over the primaries. */
	private static long scriptCalls() {
		long calls = 0;
		for (RedisServer node : cluster().primaries()) {
			String stats = node.commandString("INFO", "commandstats");
			for (String line : stats.split("\r\n")) {
				if (line.startsWith("cmdstat_evalsha:") || line.startsWith("cmdstat_eval:")) {
					String field = line.substring(line.indexOf("calls=") + 6);
					calls += Long.parseLong(field.substring(0, field.indexOf(',')));
				}
			}
		}
		return calls;
	}

}
