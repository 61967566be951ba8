package dev.holdfast.redlock;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BiPredicate;
import java.util.regex.Pattern;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;
import org.redisson.config.Protocol;
import org.redisson.config.TransportMode;

import dev.holdfast.spi.TickClaims.TickClaim;
import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.test.server.RedisServer;

import static dev.holdfast.spi.TickClaims.TickClaim.Outcome.CLAIMED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Redlock's own promises, on five real redis-server processes shared by the class. Tests that
 * stop nodes bring them back before they end. The shared contract runs in holdfast-test's
 * {@code RedlockContractTests}.
 */
class RedlockLockBackendTests {

	private static final Duration NODE_TIMEOUT = Duration.ofMillis(500);

	private static final Duration TTL = Duration.ofSeconds(10);

	/** A tolerance under which any tick is due: these tests are about the record. */
	private static final Duration ANY_TIME = Duration.ofDays(36500);

	private static final List<RedisServer> servers = new ArrayList<>();

	private static final List<RedissonClient> raw = new ArrayList<>();

	private final List<RedlockLockBackend> opened = new ArrayList<>();

	@BeforeAll
	static void startServers() {
		for (int i = 0; i < 5; i++) {
			RedisServer server = RedisServer.start();
			servers.add(server);
			Config config = new Config();
			config.setLazyInitialization(true);
			config.setCodec(StringCodec.INSTANCE);
			config.useSingleServer().setAddress(server.uri()).setRetryAttempts(0).setTimeout(1000)
				.setConnectionMinimumIdleSize(1).setConnectionPoolSize(2);
			raw.add(Redisson.create(config));
		}
	}

	@AfterAll
	static void stopServers() {
		raw.forEach((client) -> client.shutdown(0, 2, TimeUnit.SECONDS));
		servers.forEach(RedisServer::close);
	}

	@AfterEach
	void bringNodesBackAndClose() {
		for (RedisServer server : servers) {
			if (!server.isRunning()) {
				server.restart();
			}
			server.resume();
		}
		this.opened.forEach(RedlockLockBackend::close);
	}

	private RedlockLockBackend backend() {
		RedlockLockBackend backend = connect(servers.stream().map(RedisServer::uri).toList());
		this.opened.add(backend);
		return backend;
	}

	private static RedlockLockBackend connect(List<String> uris) {
		return RedlockLockBackend.connect(uris, null, null, Duration.ofSeconds(1),
				new RedlockSettings(NODE_TIMEOUT, 0.01, Duration.ofMillis(2)));
	}

	private static String key() {
		return "holdfast:redlock-test:" + UUID.randomUUID();
	}

	private static String owner() {
		return UUID.randomUUID().toString();
	}

	private static String get(int node, String key) {
		return raw.get(node).<String>getBucket(key, StringCodec.INSTANCE).get();
	}

	@Test
	void quorumIsAMajorityOfTheConfiguredNodes() {
		RedlockLockBackend backend = backend();
		assertThat(backend.nodeCount()).isEqualTo(5);
		assertThat(backend.quorum()).isEqualTo(3);
		assertThat(backend.reachableNodes()).isEqualTo(5);
		assertThat(backend.hasQuorum()).isTrue();
	}

	@Test
	void locksStillWorkWithTwoNodesDown() {
		RedlockLockBackend first = backend();
		RedlockLockBackend second = backend();
		servers.get(0).kill();
		servers.get(3).kill();
		assertThat(first.reachableNodes()).isEqualTo(3);
		assertThat(first.hasQuorum()).isTrue();
		String key = key();
		String owner = owner();
		AcquireResult result = first.tryAcquire(key, owner, TTL);
		assertThat(result.acquired()).isTrue();
		assertThat(second.tryAcquire(key, owner(), TTL).acquired()).isFalse();
		assertThat(first.renew(List.of(new HeldLock(key, owner, TTL)))).containsExactly(key);
		assertThat(first.release(key, owner)).isTrue();
		AcquireResult next = second.tryAcquire(key, owner(), TTL);
		assertThat(next.acquired()).isTrue();
		assertThat(next.fencingToken()).isGreaterThan(result.fencingToken());
	}

	@Test
	void acquisitionFailsClosedWithThreeNodesDownAndRecoversWhenTheyReturn() {
		RedlockLockBackend backend = backend();
		servers.get(1).kill();
		servers.get(2).kill();
		servers.get(4).kill();
		String key = key();
		long start = System.nanoTime();
		assertThatThrownBy(() -> backend.tryAcquire(key, owner(), TTL)).isInstanceOf(LockBackendException.class)
			.hasMessageMatching("Redlock quorum not reached while acquiring .*: [0-2] of 5 nodes answered, 3 needed.*");
		assertThat(Duration.ofNanos(System.nanoTime() - start)).as("time to fail")
			.isLessThan(NODE_TIMEOUT.multipliedBy(2).plusMillis(500));
		assertThat(backend.hasQuorum()).isFalse();
		assertThatThrownBy(() -> backend.renew(List.of(new HeldLock(key, owner(), TTL))))
			.isInstanceOf(LockBackendException.class)
			.hasMessageContaining("renewing 1 locks");
		assertThatThrownBy(() -> backend.release(key, owner())).isInstanceOf(LockBackendException.class)
			.hasMessageContaining("releasing");
		assertThat(get(0, key)).as("nothing left on the nodes that answered").isNull();
		assertThat(get(3, key)).isNull();
		servers.get(1).restart();
		servers.get(2).restart();
		servers.get(4).restart();
		AcquireResult result = await().atMost(Duration.ofSeconds(10))
			.ignoreException(LockBackendException.class)
			.until(() -> backend.tryAcquire(key, owner(), TTL), (answer) -> true);
		assertThat(result.acquired()).isTrue();
		assertThat(Duration.ofNanos(System.nanoTime() - start)).as("time to recover").isLessThan(Duration.ofSeconds(5));
	}

	@Test
	void unreachableQuorumMessageCountsAnsweredFailedAndTimedOutNodes() {
		RedlockLockBackend backend = backend();
		// Connections are opened by the first requests: open them before nodes stop answering.
		await().atMost(Duration.ofSeconds(10)).until(() -> backend.reachableNodes() == 5);
		servers.get(0).kill();
		servers.get(1).pause();
		servers.get(2).pause();
		assertThatThrownBy(() -> backend.tryAcquire(key(), owner(), TTL)).isInstanceOf(LockBackendException.class)
			.hasMessageMatching("Redlock quorum not reached while acquiring '.*': 2 of 5 nodes answered, 3 needed; "
					+ "1 failed, 2 timed out \\(node timeout 500 ms\\); " + Pattern.quote(servers.get(0).uri())
					+ ": \\w+Exception: .*; " + Pattern.quote(servers.get(1).uri()) + ": timed out; "
					+ Pattern.quote(servers.get(2).uri()) + ": timed out");
	}

	@Test
	void engineLeasesAreValidForTheTimeToLiveMinusTheConfiguredDrift() {
		RedlockSettings settings = new RedlockSettings(NODE_TIMEOUT, 0.2, Duration.ofMillis(100));
		try (RedlockLockBackend backend = RedlockLockBackend.connect(servers.stream().map(RedisServer::uri).toList(),
				null, null, Duration.ofSeconds(1), settings)) {
			DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults());
			try (Lease lease = template.acquire("drift-" + UUID.randomUUID(), null,
					LockOptions.defaults().leaseTime(TTL))) {
				// 10 s - (10 s * 0.2 + 100 ms), less the time the acquisition took
				assertThat(Duration.between(lease.acquiredAt(), lease.expiresAt()))
					.isBetween(Duration.ofMillis(7900).minus(NODE_TIMEOUT.multipliedBy(2)), Duration.ofMillis(7950));
				assertThat(lease.extend(Duration.ofSeconds(20))).isTrue();
				Instant extendedAt = Instant.now();
				// 20 s - (20 s * 0.2 + 100 ms)
				assertThat(Duration.between(extendedAt, lease.expiresAt()))
					.isBetween(Duration.ofMillis(15900).minus(NODE_TIMEOUT.multipliedBy(2)), Duration.ofMillis(15950));
			}
			finally {
				template.close();
			}
		}
	}

	@Test
	void pausedNodesDoNotStallAcquisitionBeyondTheNodeTimeout() {
		RedlockLockBackend backend = backend();
		RedlockLockBackend other = backend();
		String key = key();
		// Warm up connections before the nodes stop answering.
		assertThat(backend.reachableNodes()).isEqualTo(5);
		assertThat(other.reachableNodes()).isEqualTo(5);
		servers.get(2).pause();
		servers.get(4).pause();
		for (int i = 0; i < 5; i++) {
			String owner = owner();
			long start = System.nanoTime();
			AcquireResult result = backend.tryAcquire(key, owner, TTL);
			Duration acquire = Duration.ofNanos(System.nanoTime() - start);
			assertThat(result.acquired()).isTrue();
			assertThat(acquire).as("acquisition with two paused nodes").isLessThan(NODE_TIMEOUT.plusMillis(500));
			start = System.nanoTime();
			AcquireResult held = other.tryAcquire(key, owner(), TTL);
			assertThat(held.acquired()).isFalse();
			assertThat(Duration.ofNanos(System.nanoTime() - start)).as("failed attempt with two paused nodes")
				.isLessThan(NODE_TIMEOUT.multipliedBy(2).plusMillis(500));
			start = System.nanoTime();
			assertThat(backend.release(key, owner)).isTrue();
			assertThat(Duration.ofNanos(System.nanoTime() - start)).as("release with two paused nodes")
				.isLessThan(NODE_TIMEOUT.plusMillis(500));
		}
	}

	@Test
	void interruptedAttemptReturnsAtOnceAndReleasesWhatItTook() throws Exception {
		RedlockLockBackend backend = backend();
		assertThat(backend.reachableNodes()).isEqualTo(5);
		String key = key();
		servers.get(0).pause();
		servers.get(1).pause();
		servers.get(2).pause();
		java.util.concurrent.atomic.AtomicReference<AcquireResult> result = new java.util.concurrent.atomic.AtomicReference<>();
		java.util.concurrent.atomic.AtomicBoolean flagKept = new java.util.concurrent.atomic.AtomicBoolean();
		Thread caller = new Thread(() -> {
			result.set(backend.tryAcquire(key, owner(), TTL));
			flagKept.set(Thread.currentThread().isInterrupted());
		});
		caller.start();
		await().atMost(Duration.ofSeconds(5))
			.until(() -> caller.getState() == Thread.State.WAITING || caller.getState() == Thread.State.TIMED_WAITING);
		long interruptedAt = System.nanoTime();
		caller.interrupt();
		caller.join(5000);
		assertThat(Duration.ofNanos(System.nanoTime() - interruptedAt)).as("time to give up")
			.isLessThan(NODE_TIMEOUT.dividedBy(2));
		assertThat(result.get().acquired()).isFalse();
		assertThat(flagKept).isTrue();
		await().atMost(Duration.ofSeconds(2)).untilAsserted(() -> {
			assertThat(get(3, key)).isNull();
			assertThat(get(4, key)).isNull();
		});
	}

	@Test
	void twoClientsRacingNeverBothReachQuorum() throws Exception {
		RedlockLockBackend first = backend();
		RedlockLockBackend second = backend();
		int rounds = 300;
		List<String> keys = new ArrayList<>();
		for (int i = 0; i < rounds; i++) {
			keys.add(key());
		}
		Set<String> bothWon = ConcurrentHashMap.newKeySet();
		Set<String> noneWon = ConcurrentHashMap.newKeySet();
		boolean[][] won = race(first, second, rounds,
				(backend, i) -> backend.tryAcquire(keys.get(i), owner(), TTL).acquired());
		for (int i = 0; i < rounds; i++) {
			if (won[0][i] && won[1][i]) {
				bothWon.add(keys.get(i));
			}
			if (!won[0][i] && !won[1][i]) {
				noneWon.add(keys.get(i));
			}
		}
		assertThat(bothWon).as("keys that both clients acquired").isEmpty();
		assertThat(noneWon.size()).as("rounds that neither client won (split votes)").isLessThan(rounds);
		for (String key : noneWon) {
			for (int node = 0; node < 5; node++) {
				assertThat(get(node, key)).as("a split vote leaves nothing behind on node %d", node).isNull();
			}
		}
	}

	@Test
	void tickClaimsAreWonOnceAndMoveForwardOnlyOnEveryNode() {
		RedlockLockBackend first = backend();
		RedlockLockBackend second = backend();
		String key = key();
		Instant tick = Instant.parse("2030-01-01T00:00:00Z");
		assertThat(first.claimTick(key, tick, ANY_TIME, TTL).outcome() == CLAIMED).isTrue();
		assertThat(second.claimTick(key, tick, ANY_TIME, TTL).outcome() == CLAIMED).as("the same tick again").isFalse();
		assertThat(second.claimTick(key, tick.minusSeconds(1), ANY_TIME, TTL).outcome() == CLAIMED).as("an earlier tick").isFalse();
		assertThat(second.claimTick(key, tick.plusSeconds(1), ANY_TIME, TTL).outcome() == CLAIMED).as("the next tick").isTrue();
		for (int node = 0; node < 5; node++) {
			int n = node;
			// the claim returns once a quorum answered; the other nodes' answers may still come
			await().atMost(Duration.ofSeconds(2))
				.untilAsserted(() -> assertThat(get(n, key + "{tick}")).as("record on node %d: the tick and the claim's id", n)
					.matches(tick.plusSeconds(1).toEpochMilli() + " [0-9]+")
					.isEqualTo(get(0, key + "{tick}")));
			assertThat(get(node, key)).as("no lock on node %d", node).isNull();
			assertThat(get(node, key + "{fence}")).as("no fencing counter on node %d", node).isNull();
		}
	}

	@Test
	void aTickIsClaimedOnlyWhileItIsDueByTheNodesClocks() {
		RedlockLockBackend backend = backend();
		String key = key();
		Instant now = Instant.now().truncatedTo(java.time.temporal.ChronoUnit.MILLIS);
		Duration tolerance = Duration.ofSeconds(2);
		TickClaim early = backend.claimTick(key, now.plusSeconds(10), tolerance, TTL);
		assertThat(early.outcome()).isEqualTo(TickClaim.Outcome.NOT_DUE);
		assertThat(Duration.between(now, early.backendTime()).abs()).as("median of the nodes' times")
			.isLessThan(Duration.ofSeconds(1));
		assertThat(backend.claimTick(key, now.minusSeconds(10), tolerance, TTL).outcome())
			.isEqualTo(TickClaim.Outcome.NOT_DUE);
		for (int node = 0; node < 5; node++) {
			assertThat(get(node, key + "{tick}")).as("a claim that was not due wrote nothing on node %d", node)
				.isNull();
		}
		assertThat(backend.claimTick(key, now, tolerance, TTL).outcome()).isEqualTo(TickClaim.Outcome.CLAIMED);
		assertThat(backend().claimTick(key, now, tolerance, TTL).outcome()).isEqualTo(TickClaim.Outcome.TAKEN);
	}

	@Test
	void aClaimThatWinsSomeNodesButNoQuorumSaysSo() {
		RedlockLockBackend backend = backend();
		String key = key();
		Instant now = Instant.now();
		// another claimer took this tick on three nodes: this one can win two at most
		for (int node = 0; node < 3; node++) {
			raw.get(node).getBucket(key + "{tick}", StringCodec.INSTANCE).set(now.toEpochMilli() + " 1", TTL);
		}
		assertThat(backend.claimTick(key, now, Duration.ofSeconds(2), TTL).outcome())
			.isIn(TickClaim.Outcome.NO_QUORUM, TickClaim.Outcome.TAKEN);
		for (int node = 3; node < 5; node++) {
			raw.get(node).getBucket(key + "{tick}", StringCodec.INSTANCE).delete();
		}
		for (int node = 0; node < 2; node++) {
			raw.get(node).getBucket(key + "{tick}", StringCodec.INSTANCE).delete();
		}
		// now only node 2 holds the tick: this claim wins four nodes, a quorum
		assertThat(backend.claimTick(key, now, Duration.ofSeconds(2), TTL).outcome())
			.isEqualTo(TickClaim.Outcome.CLAIMED);
	}

	@Test
	void twoClientsRacingForATickNeverBothWinIt() throws Exception {
		RedlockLockBackend first = backend();
		RedlockLockBackend second = backend();
		// Connections are opened by the first requests: a slow one would time out and lose.
		await().atMost(Duration.ofSeconds(10))
			.until(() -> first.reachableNodes() == 5 && second.reachableNodes() == 5);
		String key = key();
		Instant start = Instant.parse("2030-01-01T00:00:00Z");
		int rounds = 100;
		boolean[][] won = race(first, second, rounds,
				(backend, i) -> backend.claimTick(key, start.plusSeconds(i), ANY_TIME, TTL).outcome() == CLAIMED);
		int unclaimed = 0;
		for (int i = 0; i < rounds; i++) {
			assertThat(won[0][i] && won[1][i]).as("both clients won tick %d", i).isFalse();
			unclaimed += (won[0][i] || won[1][i]) ? 0 : 1;
		}
		// Each of the five nodes accepts a tick once, so one of two clients gets three of them
		// unless a node answers too late.
		assertThat(unclaimed).as("ticks nobody won").isLessThan(rounds / 10);
	}

	@Test
	void acquireReleaseCyclesLeaveNothingBehindOnAnyNode() throws Exception {
		RedlockLockBackend backend = backend();
		List<String> keys = List.of(key(), key(), key());
		for (int i = 0; i < 1500; i++) {
			String key = keys.get(i % keys.size());
			String owner = owner();
			assertThat(backend.tryAcquire(key, owner, TTL).acquired()).as("cycle %d", i).isTrue();
			// not asserted: on a loaded machine a quorum may answer the release after the node
			// timeout (false), and what this test is about is what the nodes keep afterwards
			backend.release(key, owner);
		}
		// releases sent to late nodes may still be in flight
		await().atMost(NODE_TIMEOUT.multipliedBy(4)).untilAsserted(() -> {
			for (String key : keys) {
				for (int node = 0; node < 5; node++) {
					assertThat(get(node, key)).as("%s on node %d", key, node).isNull();
				}
			}
		});
	}

	@Test
	void failedAttemptReleasesWhatItTookOnEveryNode() {
		RedlockLockBackend backend = backend();
		String key = key();
		for (int node = 0; node < 3; node++) {
			raw.get(node).getBucket(key, StringCodec.INSTANCE).set("someone-else", TTL);
		}
		AcquireResult result = backend.tryAcquire(key, owner(), TTL);
		assertThat(result.acquired()).isFalse();
		assertThat(result.holderRemainingMillis()).isBetween(1L, TTL.toMillis());
		// three refusals make the quorum impossible, so the attempt may return before nodes 3 and 4
		// answered: what they granted is released as they answer, within the node timeout
		await().atMost(NODE_TIMEOUT.multipliedBy(4)).untilAsserted(() -> {
			assertThat(get(3, key)).isNull();
			assertThat(get(4, key)).isNull();
		});
		assertThat(get(0, key)).isEqualTo("someone-else");
	}

	@Test
	void renewalCountsOnlyWhenAQuorumRenewed() {
		RedlockLockBackend backend = backend();
		String kept = key();
		String lost = key();
		String owner = owner();
		assertThat(backend.tryAcquire(kept, owner, TTL).acquired()).isTrue();
		assertThat(backend.tryAcquire(lost, owner, TTL).acquired()).isTrue();
		for (int node = 0; node < 2; node++) {
			raw.get(node).getBucket(kept, StringCodec.INSTANCE).delete();
		}
		for (int node = 0; node < 3; node++) {
			raw.get(node).getBucket(lost, StringCodec.INSTANCE).delete();
		}
		Duration longer = Duration.ofSeconds(60);
		Set<String> renewed = backend
			.renew(List.of(new HeldLock(kept, owner, longer), new HeldLock(lost, owner, longer)));
		assertThat(renewed).containsExactly(kept);
		assertThat(raw.get(4).getBucket(kept, StringCodec.INSTANCE).remainTimeToLive())
			.isGreaterThan(TTL.toMillis());
	}

	@Test
	void fencingTokensIncreaseWhenTheQuorumMembershipChanges() {
		RedlockLockBackend first = backend();
		RedlockLockBackend second = backend();
		String key = key();
		// Node 0's counter runs far ahead of the others, so the first holder's token comes from
		// node 0. The next holder does not reach node 0: its token is larger only because the first
		// holder made a quorum (here nodes 0, 1, 2) remember its token before using it.
		long ahead = (System.currentTimeMillis() + TimeUnit.DAYS.toMillis(365)) * 1000;
		raw.get(0).getBucket(key + RedlockLockBackend.FENCE_SUFFIX, StringCodec.INSTANCE).set(Long.toString(ahead));
		servers.get(3).kill();
		servers.get(4).kill();
		String owner = owner();
		AcquireResult a = first.tryAcquire(key, owner, TTL);
		assertThat(a.acquired()).isTrue();
		assertThat(a.fencingToken()).isGreaterThan(ahead);
		assertThat(first.release(key, owner)).isTrue();
		// Nodes 3 and 4 come back empty (no persistence); 0 and 1 go away: the quorum is 2, 3, 4.
		servers.get(3).restart();
		servers.get(4).restart();
		servers.get(0).kill();
		servers.get(1).kill();
		AcquireResult b = acquireWhenReachable(second, key);
		assertThat(b.fencingToken()).isGreaterThan(a.fencingToken());
		// And back: 0 and 1 return empty, 3 and 4 go away: the quorum is 0, 1, 2.
		servers.get(0).restart();
		servers.get(1).restart();
		servers.get(3).kill();
		servers.get(4).kill();
		AcquireResult c = acquireWhenReachable(first, key);
		assertThat(c.fencingToken()).isGreaterThan(b.fencingToken());
	}

	@Test
	void fencingTokensStayAboveTheNodesClockAfterAllNodesRestartWithoutPersistence() {
		RedlockLockBackend backend = backend();
		String key = key();
		String owner = owner();
		AcquireResult before = backend.tryAcquire(key, owner, TTL);
		assertThat(before.acquired()).isTrue();
		backend.release(key, owner);
		servers.forEach(RedisServer::restart);
		AcquireResult after = acquireWhenReachable(backend, key);
		assertThat(after.fencingToken()).isGreaterThan(before.fencingToken());
	}

	@Test
	void releaseIsDeliveredOnceAlthoughEveryNodePublishesIt() throws Exception {
		RedlockLockBackend backend = backend();
		RedlockLockBackend listening = backend();
		String key = key();
		List<String> events = new java.util.concurrent.CopyOnWriteArrayList<>();
		try (AutoCloseable subscription = listening.subscribe(events::add)) {
			String probe = key();
			// the subscriptions are up once a probe release arrives
			await().atMost(Duration.ofSeconds(5)).until(() -> {
				String probeOwner = owner();
				if (backend.tryAcquire(probe, probeOwner, TTL).acquired()) {
					backend.release(probe, probeOwner);
				}
				return events.contains(probe);
			});
			String owner = owner();
			assertThat(backend.tryAcquire(key, owner, TTL).acquired()).isTrue();
			assertThat(backend.release(key, owner)).isTrue();
			await().atMost(Duration.ofSeconds(3)).until(() -> events.contains(key));
			// copies from the other nodes would arrive within a round trip or two
			await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(1))
				.until(() -> events.stream().filter(key::equals).count() == 1);
		}
	}

	@Test
	void listensOnceAQuorumOfNodesRegisteredTheSubscription() throws Exception {
		RedlockLockBackend backend = backend();
		assertThat(backend.isListening()).as("without a subscription").isFalse();
		// The clients (lazily initialized here) connect while every node answers.
		backend.setupWarnings();
		// Three of five nodes do not answer SUBSCRIBE: two registrations, below the quorum of three.
		servers.get(0).pause();
		servers.get(1).pause();
		servers.get(2).pause();
		try (AutoCloseable subscription = backend.subscribe((key) -> {
		})) {
			// Before, it said it listened while Redisson still registered the subscription in the background.
			await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(1)).until(() -> !backend.isListening());
			servers.get(0).resume();
			await().atMost(Duration.ofSeconds(10)).until(backend::isListening);
		}
		assertThat(backend.isListening()).as("once the subscription closed").isFalse();
	}

	@Test
	void setupWarningsNameTheUnsafeSetup() {
		RedlockLockBackend volatileNodes = backend();
		assertThat(volatileNodes.setupWarnings()).singleElement()
			.asString()
			.contains("do not persist", servers.get(0).uri(), "appendfsync always");
		try (RedisServer persistent1 = RedisServer.start(true); RedisServer persistent2 = RedisServer.start(true)) {
			RedlockLockBackend two = connect(List.of(persistent1.uri(), persistent2.uri()));
			this.opened.add(two);
			assertThat(two.setupWarnings()).singleElement().asString().contains("fewer than 3");
			RedlockLockBackend four = connect(
					List.of(persistent1.uri(), persistent2.uri(), servers.get(0).uri(), "redis://127.0.0.1:1"));
			this.opened.add(four);
			assertThat(four.setupWarnings()).hasSize(3)
				.anySatisfy((warning) -> assertThat(warning).contains("even number"))
				.anySatisfy((warning) -> assertThat(warning).contains("redis://127.0.0.1:1 could not be checked"))
				.anySatisfy((warning) -> assertThat(warning).contains("do not persist", servers.get(0).uri())
					.doesNotContain(persistent1.uri()));
		}
	}

	@Test
	void passwordIsSentToTheNodes() {
		try (RedisServer secured = RedisServer.start()) {
			Config config = new Config();
			config.useSingleServer().setAddress(secured.uri());
			RedissonClient admin = Redisson.create(config);
			try {
				admin.getRedisNodes(org.redisson.api.redisnode.RedisNodes.SINGLE)
					.getInstance()
					.setConfig("requirepass", "s3cret");
			}
			finally {
				admin.shutdown(0, 2, TimeUnit.SECONDS);
			}
			RedlockSettings settings = RedlockSettings.defaults();
			try (RedlockLockBackend withPassword = RedlockLockBackend.connect(List.of(secured.uri()), null, "s3cret",
					Duration.ofSeconds(1), settings);
					RedlockLockBackend without = RedlockLockBackend.connect(List.of(secured.uri()), null, null,
							Duration.ofSeconds(1), settings)) {
				String key = key();
				String owner = owner();
				assertThat(withPassword.tryAcquire(key, owner, TTL).acquired()).isTrue();
				assertThat(withPassword.release(key, owner)).isTrue();
				assertThatThrownBy(() -> without.tryAcquire(key, owner(), TTL)).isInstanceOf(LockBackendException.class)
					.hasMessageContaining("0 of 1 nodes answered");
			}
		}
	}

	@Test
	void nodesConfiguredWithEpollTransportHostNamesAndResp3Work() {
		assumeTrue(io.netty.channel.epoll.Epoll.isAvailable(), "native epoll transport not available");
		List<RedissonClient> clients = new ArrayList<>();
		try {
			for (RedisServer server : servers) {
				Config config = new Config();
				config.setTransportMode(TransportMode.EPOLL);
				config.setProtocol(Protocol.RESP3);
				config.useSingleServer().setAddress("redis://localhost:" + server.port());
				clients.add(Redisson.create(config));
			}
			try (RedlockLockBackend backend = new RedlockLockBackend(clients,
					new RedlockSettings(NODE_TIMEOUT, 0.01, Duration.ofMillis(2)))) {
				String key = key();
				String owner = owner();
				AcquireResult result = backend.tryAcquire(key, owner, TTL);
				assertThat(result.acquired()).isTrue();
				assertThat(result.fencingToken()).isPositive();
				assertThat(backend.tryAcquire(key, owner(), TTL).acquired()).isFalse();
				assertThat(backend.renew(List.of(new HeldLock(key, owner, TTL)))).containsExactly(key);
				assertThat(backend.release(key, owner)).isTrue();
				assertThat(backend.reachableNodes()).isEqualTo(5);
			}
		}
		finally {
			clients.forEach((client) -> client.shutdown(0, 2, TimeUnit.SECONDS));
		}
	}

	@Test
	void scriptsFlushedFromTheNodesAreSentAgainAsText() {
		RedlockLockBackend backend = backend();
		String first = key();
		String owner = owner();
		assertThat(backend.tryAcquire(first, owner, TTL).acquired()).isTrue();
		assertThat(backend.release(first, owner)).isTrue();
		for (RedissonClient client : raw) {
			client.getScript(StringCodec.INSTANCE).scriptFlush();
		}
		String second = key();
		assertThat(backend.tryAcquire(second, owner, TTL).acquired()).isTrue();
		// The acquisition is decided at a quorum; node 0's answer (sent again as text) may come after.
		await().atMost(Duration.ofSeconds(2)).until(() -> owner.equals(get(0, second)));
		assertThat(backend.release(second, owner)).isTrue();
		for (int node = 0; node < 5; node++) {
			assertThat(get(node, second)).isNull();
		}
	}

	@Test
	void badConfigurationIsRejectedWithTheEntryNamed() {
		assertThatIllegalArgumentException()
			.isThrownBy(() -> connect(List.of(servers.get(0).uri(), servers.get(0).uri().replace("127.0.0.1", "127.0.0.1"))))
			.withMessageContaining("[1]")
			.withMessageContaining("listed twice");
		assertThatIllegalArgumentException().isThrownBy(() -> connect(List.of("127.0.0.1:6379")))
			.withMessageContaining("[0]")
			.withMessageContaining("redis://host:port");
		RedlockLockBackend backend = backend();
		assertThatIllegalArgumentException().isThrownBy(() -> backend.tryAcquire(key(), owner(), Duration.ofMillis(2)))
			.withMessageContaining("too short");
	}

	/**
	 * Runs {@code attempt} for rounds 0 to {@code rounds - 1} on both clients, each round started
	 * by both at once.
	 * @return whether each client won each round
	 */
	private static boolean[][] race(RedlockLockBackend first, RedlockLockBackend second, int rounds,
			BiPredicate<RedlockLockBackend, Integer> attempt) throws Exception {
		CyclicBarrier barrier = new CyclicBarrier(2);
		boolean[][] won = new boolean[2][rounds];
		ExecutorService pool = Executors.newFixedThreadPool(2);
		try {
			List<Future<?>> futures = new ArrayList<>();
			for (int c = 0; c < 2; c++) {
				RedlockLockBackend backend = (c == 0) ? first : second;
				int client = c;
				futures.add(pool.submit(() -> {
					for (int i = 0; i < rounds; i++) {
						barrier.await(5, TimeUnit.SECONDS);
						won[client][i] = attempt.test(backend, i);
					}
					return null;
				}));
			}
			for (Future<?> future : futures) {
				future.get(60, TimeUnit.SECONDS);
			}
		}
		finally {
			pool.shutdownNow();
		}
		return won;
	}

	private static AcquireResult acquireWhenReachable(RedlockLockBackend backend, String key) {
		return await().atMost(Duration.ofSeconds(10)).ignoreException(LockBackendException.class).until(() -> {
			String owner = owner();
			AcquireResult result = backend.tryAcquire(key, owner, TTL);
			assertThat(result.acquired()).isTrue();
			backend.release(key, owner);
			return result;
		}, (result) -> true);
	}

}
