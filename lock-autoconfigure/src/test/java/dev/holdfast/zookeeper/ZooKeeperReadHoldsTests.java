package dev.holdfast.zookeeper;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.data.Stat;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.ClusterLocks.BackendLock;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.WaitQueue.Outcome;
import dev.holdfast.test.server.ZooKeeperServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

/**
 * Read holds on the ZooKeeper backend (RWL-40 to RWL-45), called through the backend's SPI on one
 * in-process server: reader nodes beside the writers' in the key's queue.
 */
class ZooKeeperReadHoldsTests {

	private static final Duration TTL = Duration.ofSeconds(30);

	private static ZooKeeperServer server;

	private static CuratorFramework observer;

	private final List<AutoCloseable> closeables = new ArrayList<>();

	private final ExecutorService pool = Executors.newCachedThreadPool();

	private final String key = "holdfast:zk-" + UUID.randomUUID();

	private final String parent = "/holdfast/locks/" + ZooKeeperPaths.encode(this.key);

	@BeforeAll
	static void startServer() {
		server = ZooKeeperServer.start();
		observer = ZooKeeperClients.connect(server.connectString());
	}

	@AfterAll
	static void stopServer() {
		observer.close();
		server.close();
	}

	@AfterEach
	void close() throws Exception {
		this.pool.shutdownNow();
		for (int i = this.closeables.size() - 1; i >= 0; i--) {
			this.closeables.get(i).close();
		}
	}

	private ZooKeeperLockBackend backend() {
		ZooKeeperLockBackend backend = ZooKeeperClients.backend(server.connectString());
		this.closeables.add(backend);
		return backend;
	}

	private <T> Future<T> inBackground(Callable<T> call) {
		return this.pool.submit(call);
	}

	private Future<Outcome> reading(ZooKeeperLockBackend backend, String owner, Duration wait) {
		return inBackground(() -> backend.acquireShared(this.key, owner, TTL, wait));
	}

	private Future<Outcome> writing(ZooKeeperLockBackend backend, String owner, Duration wait) {
		return inBackground(() -> backend.acquire(this.key, owner, TTL, wait));
	}

	private AcquireResult tryRead(ZooKeeperLockBackend backend, String owner) {
		return backend.tryAcquireShared(this.key, owner, TTL, Duration.ZERO);
	}

	private List<String> queue() throws Exception {
		if (observer.checkExists().forPath(this.parent) == null) {
			return List.of();
		}
		List<String> children = new ArrayList<>(observer.getChildren().forPath(this.parent));
		children.sort(Comparator.comparing(ZooKeeperPaths::sequence));
		return children;
	}

	private void awaitQueueOf(int nodes) {
		await().atMost(Duration.ofSeconds(10)).until(() -> queue().size() == nodes);
	}

	private static void stillWaiting(Future<?>... calls) {
		await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> {
			for (Future<?> call : calls) {
				if (call.isDone()) {
					return false;
				}
			}
			return true;
		});
	}

	private static long acquired(Future<Outcome> call) throws Exception {
		AcquireResult result = call.get(10, TimeUnit.SECONDS).result();
		assertThat(result.acquired()).isTrue();
		return result.fencingToken();
	}

	@Test
	void readersOverlap() throws Exception {
		ZooKeeperLockBackend first = backend();
		ZooKeeperLockBackend second = backend();

		AcquireResult once = tryRead(first, "r1@app-1");
		AcquireResult again = tryRead(second, "r2@app-2");
		Outcome waiting = first.acquireShared(this.key, "r3@app-1", TTL, Duration.ofSeconds(5));

		assertThat(once.acquired()).isTrue();
		assertThat(again.acquired()).isTrue();
		assertThat(waiting.result().acquired()).isTrue();
		assertThat(queue()).hasSize(3).allMatch(ZooKeeperPaths::reader);
		assertThat(first.tryAcquire(this.key, "w", TTL).acquired()).isFalse();
		assertThat(first.release(this.key, "r1@app-1")).isTrue();
		assertThat(second.release(this.key, "r2@app-2")).isTrue();
		assertThat(first.release(this.key, "r3@app-1")).isTrue();
		assertThat(queue()).isEmpty();
	}

	@Test
	void writerWaitsForEveryReaderAndTakesTheLockAfterTheLastRelease() throws Exception {
		ZooKeeperLockBackend first = backend();
		ZooKeeperLockBackend second = backend();
		long firstToken = tryRead(first, "r1").fencingToken();
		long secondToken = tryRead(second, "r2").fencingToken();
		Future<Outcome> writer = writing(backend(), "w", Duration.ofSeconds(20));
		awaitQueueOf(3);

		assertThat(first.release(this.key, "r1")).isTrue();
		stillWaiting(writer);
		assertThat(second.release(this.key, "r2")).isTrue();

		assertThat(acquired(writer)).isGreaterThan(Math.max(firstToken, secondToken));
	}

	@Test
	void readerWaitsWhileWriteHeldAndIsWokenByTheRelease() throws Exception {
		ZooKeeperLockBackend writer = backend();
		long writeToken = writer.tryAcquire(this.key, "w", TTL).fencingToken();
		Future<Outcome> reader = reading(backend(), "r", Duration.ofSeconds(20));
		awaitQueueOf(2);
		stillWaiting(reader);
		long released = System.nanoTime();

		assertThat(writer.release(this.key, "w")).isTrue();

		assertThat(acquired(reader)).isGreaterThan(writeToken);
		assertThat(Duration.ofNanos(System.nanoTime() - released)).isLessThan(Duration.ofSeconds(5));
	}

	/**
	 * Queue: writer w1 holds; writer w2 waits; readers r1, r2 wait. Both readers watch w2, the
	 * nearest lower writer (not r1, the predecessor of r2); w2 holds after w1, then both readers at once.
	 */
	@Test
	void readersBehindAWaitingWriterWatchItAndAreServedAfterIt() throws Exception {
		ZooKeeperLockBackend first = backend();
		first.tryAcquire(this.key, "w1", TTL);
		ZooKeeperLockBackend secondBackend = backend();
		Future<Outcome> second = writing(secondBackend, "w2", Duration.ofSeconds(20));
		awaitQueueOf(2);
		Future<Outcome> r1 = reading(backend(), "r1", Duration.ofSeconds(20));
		awaitQueueOf(3);
		Future<Outcome> r2 = reading(backend(), "r2", Duration.ofSeconds(20));
		awaitQueueOf(4);
		List<String> queue = queue();
		await().atMost(Duration.ofSeconds(5))
			.untilAsserted(() -> assertThat(watchesOn()).containsEntry(queue.get(0), 1)
				.containsEntry(queue.get(1), 2)
				.doesNotContainKeys(queue.get(2), queue.get(3)));

		assertThat(first.release(this.key, "w1")).isTrue();
		long writeToken = acquired(second);
		stillWaiting(r1, r2);
		assertThat(secondBackend.release(this.key, "w2")).isTrue();

		assertThat(acquired(r1)).isGreaterThan(writeToken);
		assertThat(acquired(r2)).isGreaterThan(writeToken);
	}

	@Test
	void waitingWriterBlocksALaterReaderAndAWriterThatGaveUpStopsBlocking() throws Exception {
		ZooKeeperLockBackend readers = backend();
		assertThat(tryRead(readers, "r1").acquired()).isTrue();
		Future<Outcome> writer = writing(backend(), "w", Duration.ofSeconds(3));
		awaitQueueOf(2);
		Future<Outcome> later = reading(backend(), "r2", Duration.ofSeconds(20));
		awaitQueueOf(3);
		stillWaiting(later);

		assertThat(writer.get(10, TimeUnit.SECONDS).result().acquired()).isFalse();

		acquired(later);
		assertThat(queue()).hasSize(2).allMatch(ZooKeeperPaths::reader);
	}

	/**
	 * W0 holds, W1 waits, R waits behind W1: when W1 gives up, R watches W0 and does not hold
	 * beside it; W0's release serves R (RWL-41).
	 */
	@Test
	void readerBehindAWaitingWriterThatGivesUpStillWaitsForTheHoldingWriter() throws Exception {
		ZooKeeperLockBackend holder = backend();
		assertThat(holder.tryAcquire(this.key, "w0", TTL).acquired()).isTrue();
		Future<Outcome> waiting = writing(backend(), "w1", Duration.ofSeconds(2));
		awaitQueueOf(2);
		Future<Outcome> reader = reading(backend(), "r", Duration.ofSeconds(20));
		awaitQueueOf(3);

		assertThat(waiting.get(10, TimeUnit.SECONDS).result().acquired()).isFalse();
		awaitQueueOf(2);
		stillWaiting(reader);

		assertThat(holder.release(this.key, "w0")).isTrue();
		acquired(reader);
	}

	@Test
	void oneShotSharedAttemptIsRefusedWhileWriteHeldOrAWriterWaitsAndLeavesNoNode() throws Exception {
		ZooKeeperLockBackend writer = backend();
		ZooKeeperLockBackend reader = backend();
		writer.tryAcquire(this.key, "w1", TTL);
		Stat before = observer.checkExists().forPath(this.parent);

		AcquireResult whileHeld = tryRead(reader, "r1");

		assertThat(whileHeld.acquired()).isFalse();
		assertThat(whileHeld.holderRemainingMillis()).isBetween(1L, TTL.toMillis());
		assertThat(observer.checkExists().forPath(this.parent).getCversion()).as("nodes created in the queue")
			.isEqualTo(before.getCversion());
		assertThat(writer.release(this.key, "w1")).isTrue();

		assertThat(tryRead(reader, "r1").acquired()).isTrue();
		Future<Outcome> waiting = writing(writer, "w2", Duration.ofSeconds(20));
		awaitQueueOf(2);
		Stat waited = observer.checkExists().forPath(this.parent);

		AcquireResult whileWaited = tryRead(backend(), "r2");

		assertThat(whileWaited.acquired()).isFalse();
		assertThat(whileWaited.holderRemainingMillis()).isEqualTo(-1);
		assertThat(observer.checkExists().forPath(this.parent).getCversion()).isEqualTo(waited.getCversion());
		assertThat(reader.release(this.key, "r1")).isTrue();
		acquired(waiting);
	}

	/** The owner of a read hold asks again (another local reader, RWL-42): its hold, unless a writer waits. */
	@Test
	void joinByTheSameOwnerCreatesNothingAndIsRefusedWhileAWriterWaits() throws Exception {
		ZooKeeperLockBackend reader = backend();
		long token = tryRead(reader, "r").fencingToken();

		AcquireResult joined = tryRead(reader, "r");

		assertThat(joined.acquired()).isTrue();
		assertThat(joined.fencingToken()).isEqualTo(token);
		assertThat(queue()).hasSize(1);
		Future<Outcome> writer = writing(backend(), "w", Duration.ofSeconds(20));
		awaitQueueOf(2);
		assertThat(tryRead(reader, "r").acquired()).isFalse();
		Future<Outcome> waitingJoin = reading(reader, "r", Duration.ofMillis(700));
		assertThat(waitingJoin.get(10, TimeUnit.SECONDS).result().acquired()).isFalse();
		assertThat(queue()).hasSize(2);
		assertThat(reader.release(this.key, "r")).isTrue();
		acquired(writer);
	}

	/**
	 * A join waits behind a writer; its owner's hold is released here meanwhile (the last local
	 * reader left), so its node is gone when the writer leaves: the join takes anew, a new node
	 * for the same owner, with a token after the writer's (RWL-46).
	 */
	@Test
	void waitingJoinWhoseHoldWasReleasedHereTakesANewNode() throws Exception {
		ZooKeeperLockBackend reader = backend();
		ZooKeeperLockBackend writing = backend();
		assertThat(tryRead(reader, "r").acquired()).isTrue();
		Future<Outcome> writer = writing(writing, "w", Duration.ofSeconds(20));
		awaitQueueOf(2);
		Future<Outcome> join = reading(reader, "r", Duration.ofSeconds(20));
		stillWaiting(join);

		assertThat(reader.release(this.key, "r")).isTrue();
		long writeToken = acquired(writer);
		assertThat(writing.release(this.key, "w")).isTrue();

		assertThat(acquired(join)).isGreaterThan(writeToken);
		assertThat(queue()).hasSize(1);
		assertThat(reader.release(this.key, "r")).isTrue();
		awaitQueueOf(0);
	}

	/** A join asking a longer lease than the node's writes it to the node first; a shorter one writes nothing. */
	@Test
	void joinWithALongerLeaseWritesItToTheNode() throws Exception {
		ZooKeeperLockBackend reader = backend();
		assertThat(reader.tryAcquireShared(this.key, "r", Duration.ofSeconds(2), Duration.ZERO).acquired()).isTrue();
		String node = this.parent + "/" + queue().get(0);

		assertThat(reader.tryAcquireShared(this.key, "r", TTL, Duration.ZERO).acquired()).isTrue();
		assertThat(new String(observer.getData().forPath(node), StandardCharsets.US_ASCII)).startsWith("30000");
		assertThat(reader.tryAcquireShared(this.key, "r", Duration.ofSeconds(1), Duration.ZERO).acquired()).isTrue();
		assertThat(new String(observer.getData().forPath(node), StandardCharsets.US_ASCII)).startsWith("30000");
	}

	/**
	 * The one-shot reader's race path (a writer queued between its listing and its node, driven
	 * through the queue itself): it lists, is refused with no remaining time (RWL-42) and deletes its node.
	 */
	@Test
	void oneShotReaderQueuedBehindAWaitingWriterIsRefusedWithoutRemainingTimeAndDeletesItsNode() throws Exception {
		ZooKeeperLockBackend reader = backend();
		assertThat(tryRead(reader, "r1").acquired()).isTrue();
		Future<Outcome> writer = writing(backend(), "w", Duration.ofSeconds(20));
		awaitQueueOf(2);

		Outcome refused = reader.queue().acquire(this.key, "r2", TTL, Duration.ZERO, System.nanoTime(), true);

		assertThat(refused.result().acquired()).isFalse();
		assertThat(refused.result().holderRemainingMillis()).isEqualTo(-1);
		awaitQueueOf(2);
		assertThat(writer.isDone()).isFalse();
		assertThat(reader.release(this.key, "r1")).isTrue();
		acquired(writer);
	}

	/**
	 * A join waiting behind a writer while the server is down longer than Curator retries a read
	 * (sessions of 30 s): woken by the disconnection, it awaits the connection (ZK-11), lists
	 * again and is granted its hold's token once the writer gives up (RWL-46).
	 */
	@Test
	void waitingJoinWhoseServerIsDownBrieflyIsGrantedOnceTheWriterGoes() throws Exception {
		ZooKeeperLockBackend reader = longSessionBackend();
		long token = tryRead(reader, "r").fencingToken();
		Future<Outcome> writer = writing(longSessionBackend(), "w", Duration.ofSeconds(12));
		awaitQueueOf(2);
		Future<Outcome> join = reading(reader, "r", Duration.ofSeconds(40));
		stillWaiting(join);

		server.stop(0);
		try {
			await("the join still waiting while the server is down").during(Duration.ofSeconds(4))
				.atMost(Duration.ofSeconds(5))
				.until(() -> !join.isDone());
		}
		finally {
			server.restart(0);
		}

		assertThat(writer.get(30, TimeUnit.SECONDS).result().acquired()).isFalse();
		AcquireResult joined = join.get(20, TimeUnit.SECONDS).result();
		assertThat(joined.acquired()).isTrue();
		assertThat(joined.fencingToken()).isEqualTo(token);
	}

	private ZooKeeperLockBackend longSessionBackend() {
		ZooKeeperLockBackend backend = ZooKeeperLockBackend.owning(
				ZooKeeperClients.connect(server.connectString(), Duration.ofSeconds(30), Duration.ofSeconds(1)), "/holdfast");
		this.closeables.add(backend);
		return backend;
	}

	/**
	 * A reader renewed every 300 ms keeps a waiting writer out past its 1.5 s lease; once it is
	 * not renewed, the writer deletes its expired node (judged by the ensemble's clock) and holds.
	 */
	@Test
	void renewedReaderKeepsAWaitingWriterOutAndAnUnrenewedOneIsTakenOver() throws Exception {
		ZooKeeperLockBackend reader = backend();
		Duration lease = Duration.ofMillis(1500);
		assertThat(reader.tryAcquireShared(this.key, "r", lease, Duration.ZERO).acquired()).isTrue();
		Future<Outcome> writer = writing(backend(), "w", Duration.ofSeconds(20));
		long end = System.nanoTime() + Duration.ofSeconds(4).toNanos();
		while (System.nanoTime() < end) {
			assertThat(reader.renewShared(List.of(new HeldLock(this.key, "r", lease)))).containsExactly(this.key);
			assertThat(writer.isDone()).isFalse();
			Thread.sleep(300); // the renewal period
		}

		acquired(writer);
		assertThat(reader.renewShared(List.of(new HeldLock(this.key, "r", lease)))).isEmpty();
	}

	/**
	 * Two readers hold, the second unrenewed (1.5 s): the writer behind them watches the second,
	 * its predecessor, deletes it once expired, and still waits for the first.
	 */
	@Test
	void writerBehindSeveralReadersTakesOverAnExpiredOneThatIsNotTheHead() throws Exception {
		ZooKeeperLockBackend renewed = backend();
		assertThat(tryRead(renewed, "r1").acquired()).isTrue();
		assertThat(backend().tryAcquireShared(this.key, "r2", Duration.ofMillis(1500), Duration.ZERO).acquired()).isTrue();
		String expiring = queue().get(1);
		Future<Outcome> writer = writing(backend(), "w", Duration.ofSeconds(20));
		awaitQueueOf(3);

		await().atMost(Duration.ofSeconds(10)).until(() -> !queue().contains(expiring));

		stillWaiting(writer);
		assertThat(renewed.release(this.key, "r1")).isTrue();
		acquired(writer);
	}

	/** A one-shot writer judges the head: an expired first reader is deleted, the live one still refuses it. */
	@Test
	void oneShotWriterClearsAnExpiredHeadReaderAndIsRefusedByTheLiveOne() throws Exception {
		ZooKeeperLockBackend writer = backend();
		assertThat(backend().tryAcquireShared(this.key, "r1", Duration.ofMillis(1000), Duration.ZERO).acquired()).isTrue();
		String expiring = queue().get(0);
		assertThat(tryRead(backend(), "r2").acquired()).isTrue();

		await().atMost(Duration.ofSeconds(10))
			.pollInterval(Duration.ofMillis(200))
			.until(() -> !writer.tryAcquire(this.key, "w", TTL).acquired() && !queue().contains(expiring));

		assertThat(queue()).hasSize(1).allMatch(ZooKeeperPaths::reader);
	}

	@Test
	void readerTokensLieBetweenTheWritesAroundThem() throws Exception {
		ZooKeeperLockBackend backend = backend();
		long firstWrite = backend.tryAcquire(this.key, "w1", TTL).fencingToken();
		ZooKeeperLockBackend reader = backend();
		Future<Outcome> waitingReader = reading(reader, "r1", Duration.ofSeconds(20));
		awaitQueueOf(2);
		backend.release(this.key, "w1");
		long firstRead = acquired(waitingReader);
		long secondRead = tryRead(backend, "r2").fencingToken();
		Future<Outcome> writer = writing(backend, "w2", Duration.ofSeconds(20));
		awaitQueueOf(3);
		backend.release(this.key, "r2");
		reader.release(this.key, "r1");
		long secondWrite = acquired(writer);
		backend.release(this.key, "w2");
		long thirdRead = tryRead(backend, "r3").fencingToken();

		assertThat(firstWrite).isLessThan(firstRead).isLessThan(secondRead);
		assertThat(secondWrite).isGreaterThan(firstRead).isGreaterThan(secondRead).isLessThan(thirdRead);
	}

	@Test
	void readersSessionLostLosesTheHoldAndFreesTheKey() throws Exception {
		ZooKeeperLockBackend reader = backend();
		List<String> lost = new CopyOnWriteArrayList<>();
		this.closeables.add(reader.onLost((key, owner, reason) -> lost.add(owner)));
		assertThat(tryRead(reader, "r").acquired()).isTrue();
		Future<Outcome> writer = writing(backend(), "w", Duration.ofSeconds(20));
		awaitQueueOf(2);

		ZooKeeperClients.expireSession(reader.client(), server.connectString());

		acquired(writer);
		await().atMost(Duration.ofSeconds(10)).until(() -> lost.contains("r"));
		assertThat(reader.size()).isZero();
	}

	@Test
	void readerThatGivesUpOrIsInterruptedLeavesNoNode() throws Exception {
		ZooKeeperLockBackend writer = backend();
		ZooKeeperLockBackend reader = backend();
		writer.tryAcquire(this.key, "w", TTL);

		Outcome gaveUp = reader.acquireShared(this.key, "r1", TTL, Duration.ofMillis(500));
		assertThat(gaveUp.result().acquired()).isFalse();
		awaitQueueOf(1);
		Future<Outcome> interrupted = reading(reader, "r2", Duration.ofSeconds(20));
		awaitQueueOf(2);
		interrupted.cancel(true);

		awaitQueueOf(1);
		assertThat(queue()).noneMatch(ZooKeeperPaths::reader);
	}

	@Test
	void readHeldKeyIsListedAndForcedReleaseEndsTheGroup() throws Exception {
		ZooKeeperLockBackend first = backend();
		ZooKeeperLockBackend second = backend();
		long firstToken = tryRead(first, "r1@app-1").fencingToken();
		long secondToken = tryRead(second, "r2@app-2").fencingToken();
		long thirdToken = tryRead(second, "r3@app-2").fencingToken();

		BackendLock listed = first.lock(this.key);

		assertThat(listed).isNotNull();
		assertThat(listed.instance()).isEqualTo("~readers(app-1, app-2)");
		assertThat(listed.fencingToken()).isEqualTo(firstToken);
		assertThat(listed.remainingMillis()).isBetween(1L, TTL.toMillis());
		assertThat(first.listLocks("holdfast:", 1000).locks()).filteredOn((lock) -> lock.key().equals(this.key))
			.extracting(BackendLock::instance, BackendLock::fencingToken)
			.containsExactly(tuple("~readers(app-1, app-2)", firstToken));
		assertThat(first.forceRelease(this.key, secondToken)).isTrue();
		assertThat(queue()).hasSize(2);
		assertThat(first.forceRelease(this.key, null)).isTrue();
		assertThat(queue()).isEmpty();
		assertThat(second.renewShared(List.of(new HeldLock(this.key, "r3@app-2", TTL)))).isEmpty();
		assertThat(first.tryAcquire(this.key, "w", TTL).fencingToken()).isGreaterThan(thirdToken);
	}

	/** The watches of the server on the nodes of the key's queue, by node name. */
	private Map<String, Integer> watchesOn() {
		Map<String, Integer> watches = new LinkedHashMap<>();
		String current = null;
		for (String line : server.command(0, "wchp").split("\n")) {
			if (line.startsWith("/")) {
				current = line.startsWith(this.parent + "/") ? ZooKeeperPaths.nodeName(line.trim()) : null;
				if (current != null) {
					watches.put(current, 0);
				}
			}
			else if (current != null && !line.isBlank()) {
				watches.merge(current, 1, Integer::sum);
			}
		}
		return watches;
	}

}
