package dev.holdfast.multi;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.InitializingBean;
import org.springframework.context.SmartLifecycle;
import org.springframework.core.io.ClassPathResource;
import org.springframework.data.redis.connection.RedisClusterConfiguration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisSentinelConfiguration;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;

import dev.holdfast.Lease;
import dev.holdfast.LeaseInfo;
import dev.holdfast.Leases;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockInterruptedException;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.jdbc.JdbcLockBackend;
import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.redis.ReplicaAcks;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.HeldLock;
import dev.holdfast.spi.KeySetAcquisition;
import dev.holdfast.spi.KeySetAcquisition.FirstTaken;
import dev.holdfast.spi.LeaseRenewal;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.server.PostgresServer;
import dev.holdfast.test.server.RedisCluster;
import dev.holdfast.test.server.RedisSentinels;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Several keys in one backend call (MKY-6), on real Redis (Lettuce and Jedis, standalone and
 * Sentinel) and a real PostgreSQL: the calls are counted at the server (Redis {@code INFO
 * commandstats}) or at the backend's data source (statements prepared).
 */
class KeySetAcquisitionTests {

	private static final Pattern CALLS = Pattern.compile("calls=(\\d+)");

	private static final Duration TTL = Duration.ofSeconds(30);

	private static RedisServer redis;

	private static RedisSentinels sentinels;

	private static boolean schemaCreated;

	private final List<AutoCloseable> closeAfterTest = new ArrayList<>();

	/** Statements prepared on the PostgreSQL backends' connections. */
	private final AtomicLong statements = new AtomicLong();

	/** Statements PostgreSQL aborted as deadlocked (40P01), which the backend runs again (JDB-5). */
	private final AtomicLong deadlocks = new AtomicLong();

	@AfterEach
	void close() throws Exception {
		for (int i = this.closeAfterTest.size() - 1; i >= 0; i--) {
			this.closeAfterTest.get(i).close();
		}
	}

	@AfterAll
	static void stopServers() {
		if (redis != null) {
			redis.close();
		}
		if (sentinels != null) {
			sentinels.close();
		}
	}

	@ParameterizedTest
	@ValueSource(strings = { "redis", "jedis", "sentinel", "postgresql" })
	void twoFreeKeysAreTakenInOneBackendCallAsTwoLeases(String server) {
		DefaultLockTemplate template = template(server);
		DefaultLockTemplate other = template(server);
		String name = "batch-" + UUID.randomUUID();
		warmUp(template, name);
		long before = calls(server);
		try (Leases leases = template.acquireAll(name, List.of("a", "b"), LockOptions.defaults())) {
			assertThat(calls(server) - before).as("backend calls to take two free keys").isOne();
			assertThat(leases.leases()).hasSize(2).allSatisfy((lease) -> {
				assertThat(lease.isValid()).isTrue();
				assertThat(lease.fencingToken()).isPositive();
			});
			assertThat(template.heldLeases()).extracting(LeaseInfo::key)
				.contains(template.keyFor(name, "a"), template.keyFor(name, "b"));
			assertThat(other.tryAcquire(name, "a", LockOptions.defaults().waitTime(Duration.ZERO))).isEmpty();
			assertThat(other.tryAcquire(name, "b", LockOptions.defaults().waitTime(Duration.ZERO))).isEmpty();
			assertThat(leases.lease("b").extend(Duration.ofMinutes(1))).as("each key's lease, as a single one's")
				.isTrue();
		}
		await().atMost(Duration.ofSeconds(5)).until(() -> template.releasesInFlight() == 0);
		assertThat(template.heldLeases()).isEmpty();
		other.acquire(name, "a", LockOptions.defaults().waitTime(Duration.ZERO)).close();
		other.acquire(name, "b", LockOptions.defaults().waitTime(Duration.ZERO)).close();
	}

	@ParameterizedTest
	@ValueSource(strings = { "redis", "jedis", "sentinel", "postgresql" })
	void eachKeysTokenIncreasesAcrossHoldersAsForASingleKey(String server) {
		LockBackend backend = backend(server);
		KeySetAcquisition batch = (KeySetAcquisition) backend;
		String a = "batch-" + UUID.randomUUID() + ":a";
		String b = a.replace(":a", ":b");
		backend.tryAcquire(a.replace(":a", ":warm-up"), "warm-up", TTL);
		// a's counter far above the clock, as a key taken more often than once a microsecond has it
		long high = 9_000_000_000_000_000L;
		if (server.equals("postgresql")) {
			new JdbcTemplate(postgres()).update("INSERT INTO holdfast_lock VALUES (?, '', ?, 0, 0, 'released')", a, high);
		}
		else {
			(server.equals("sentinel") ? sentinels.primary() : redis).command("SET", "{" + a + "}:fence",
					Long.toString(high));
		}
		long[] first = batch.tryAcquireAll(List.of(new HeldLock(a, "x1", TTL), new HeldLock(b, "x2", TTL)));
		assertThat(first).isNotNull();
		assertThat(first[0]).as("the counter + 1").isEqualTo(high + 1);
		assertThat(first[1]).isPositive();
		assertThat(backend.release(a, "x1") && backend.release(b, "x2")).isTrue();
		AcquireResult single = backend.tryAcquire(a, "y1", TTL);
		assertThat(single.fencingToken()).isGreaterThan(first[0]);
		assertThat(backend.release(a, "y1")).isTrue();
		long[] again = batch.tryAcquireAll(List.of(new HeldLock(a, "x3", TTL), new HeldLock(b, "x4", TTL)));
		assertThat(again).isNotNull();
		assertThat(again[0]).isGreaterThan(single.fencingToken());
		assertThat(again[1]).isGreaterThan(first[1]);
	}

	@ParameterizedTest
	@ValueSource(strings = { "redis", "jedis", "sentinel", "postgresql" })
	void aHeldKeyMakesTheBatchTakeNothing(String server) {
		LockBackend backend = backend(server);
		KeySetAcquisition batch = (KeySetAcquisition) backend;
		String prefix = "batch-" + UUID.randomUUID();
		backend.tryAcquire(prefix + ":warm-up", "warm-up", TTL);
		assertThat(batch.acquiresKeySets()).isTrue();
		// held first, held last: a statement that took the first rows must give them back
		for (String held : List.of(prefix + ":a", prefix + ":c")) {
			assertThat(backend.tryAcquire(held, "holder-" + held, TTL).acquired()).isTrue();
			List<HeldLock> locks = List.of(new HeldLock(prefix + ":a", "x1-" + held, TTL),
					new HeldLock(prefix + ":b", "x2-" + held, TTL), new HeldLock(prefix + ":c", "x3-" + held, TTL));
			assertThat(batch.tryAcquireAll(locks)).isNull();
			for (HeldLock lock : locks) {
				if (!lock.key().equals(held)) {
					assertThat(backend.tryAcquire(lock.key(), "free-" + held, TTL).acquired())
						.as("%s, not held, left free", lock.key())
						.isTrue();
					assertThat(backend.release(lock.key(), "free-" + held)).isTrue();
				}
			}
			assertThat(backend.release(held, "holder-" + held)).isTrue();
		}
		if (!server.equals("postgresql")) {
			RedisServer primary = server.equals("sentinel") ? sentinels.primary() : redis;
			assertThat(primary.command("EXISTS", "{" + prefix + ":a}:waiters", "{" + prefix + ":c}:waiters"))
				.as("waiters recorded")
				.isEqualTo(0L);
		}
	}

	@ParameterizedTest
	@ValueSource(strings = { "redis", "postgresql" })
	void aKeyReservedForAnotherWaiterIsNotTaken(String server) {
		LockBackend backend = backend(server);
		KeySetAcquisition batch = (KeySetAcquisition) backend;
		String prefix = "batch-" + UUID.randomUUID();
		String reserved = prefix + ":b";
		backend.tryAcquire(prefix + ":warm-up", "warm-up", TTL);
		reserveForAnotherWaiter(server, reserved);
		List<HeldLock> locks = List.of(new HeldLock(prefix + ":a", "x1", TTL), new HeldLock(reserved, "x2", TTL));
		assertThat(batch.tryAcquireAll(locks)).isNull();
		assertThat(backend.tryAcquire(prefix + ":a", "free", TTL).acquired()).as("the free key, left free").isTrue();
		assertThat(backend.tryAcquire(reserved, "x3", TTL).acquired()).as("the reserved key").isFalse();
	}

	@Test
	void aFencingCounterAtItsLimitFailsTheBatchBeforeAnyKeyIsTaken() {
		LockBackend backend = backend("redis");
		KeySetAcquisition batch = (KeySetAcquisition) backend;
		String prefix = "batch-" + UUID.randomUUID();
		redis.command("SET", "{" + prefix + ":b}:fence", Long.toString((1L << 53) - 1));
		List<HeldLock> locks = List.of(new HeldLock(prefix + ":a", "x1", TTL), new HeldLock(prefix + ":b", "x2", TTL));
		assertThatExceptionOfType(LockBackendException.class).isThrownBy(() -> batch.tryAcquireAll(locks))
			.withMessageContaining("2^53");
		assertThat(redis.command("EXISTS", "{" + prefix + ":a}")).as("the first key, untouched").isEqualTo(0L);
		assertThat(backend.tryAcquire(prefix + ":a", "free", TTL).acquired()).as("the first key, free").isTrue();
	}

	@Test
	void aResentBatchAnswersAsItsFirstRun() {
		LockBackend backend = backend("redis");
		KeySetAcquisition batch = (KeySetAcquisition) backend;
		String prefix = "batch-" + UUID.randomUUID();
		List<HeldLock> locks = List.of(new HeldLock(prefix + ":a", "x1", TTL), new HeldLock(prefix + ":b", "x2", TTL));
		long[] first = batch.tryAcquireAll(locks);
		assertThat(first).isNotNull();
		assertThat(batch.tryAcquireAll(locks)).as("the same request again").containsExactly(first);
		// the first run's answer lost, then one of its keys expired and was taken by another owner
		redis.command("SET", "{" + prefix + ":b}", "another", "PX", "10000");
		assertThat(batch.tryAcquireAll(locks)).isNull();
		assertThat(backend.tryAcquire(prefix + ":a", "free", TTL).acquired()).as("its other key, left free").isTrue();
	}

	@ParameterizedTest
	@ValueSource(strings = { "redis", "postgresql" })
	void aKeyThisThreadHoldsTakesThePerKeyPath(String server) {
		DefaultLockTemplate template = template(server);
		String name = "batch-" + UUID.randomUUID();
		warmUp(template, name);
		try (Lease outer = template.acquire(name, "a", LockOptions.defaults())) {
			long before = calls(server);
			try (Leases leases = template.acquireAll(name, List.of("a", "b"), LockOptions.defaults())) {
				assertThat(calls(server) - before).as("backend calls: b alone").isOne();
				assertThat(leases.lease("a").fencingToken()).as("a, reentered").isEqualTo(outer.fencingToken());
			}
		}
	}

	@Test
	void aKeyALocalWaiterWaitsForTakesThePerKeyPath() throws Exception {
		AtomicLong batches = new AtomicLong();
		RedisLockBackend backend = new RedisLockBackend(redisFactory("jedis"), RedisLockBackend.DEFAULT_CHANNEL) {
			@Override
			public long @Nullable [] tryAcquireAll(List<HeldLock> locks) {
				batches.incrementAndGet();
				return super.tryAcquireAll(locks);
			}
		};
		this.closeAfterTest.add(backend);
		DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults());
		this.closeAfterTest.add(template);
		DefaultLockTemplate elsewhere = template("redis");
		String name = "batch-" + UUID.randomUUID();
		Lease held = elsewhere.acquire(name, "a", LockOptions.defaults());
		CompletableFuture<Long> waiter = CompletableFuture.supplyAsync(() -> {
			try (Lease lease = template.acquire(name, "a", LockOptions.defaults().waitTime(Duration.ofSeconds(20)))) {
				return lease.fencingToken();
			}
		}, (task) -> new Thread(task, "local-waiter").start());
		String waiters = "{" + template.keyFor(name, "a") + "}:waiters";
		await().atMost(Duration.ofSeconds(5)).until(() -> Long.valueOf(1).equals(redis.command("EXISTS", waiters)));
		assertThat(template.tryAcquireAll(name, List.of("a", "b"), LockOptions.defaults().waitTime(Duration.ZERO)))
			.isEmpty();
		assertThat(batches).as("batch calls, a's line not empty here").hasValue(0);
		held.close();
		assertThat(waiter.get(10, TimeUnit.SECONDS)).as("the local waiter's token").isGreaterThan(held.fencingToken());
		try (Leases both = template.acquireAll(name, List.of("a", "b"), LockOptions.defaults())) {
			assertThat(batches).as("batch calls, a free and wanted by nobody").hasValue(1);
		}
	}

	@ParameterizedTest
	@ValueSource(strings = { "lettuce", "jedis" })
	void anErrorReplyTurnsTheBatchOffAndTheKeysAreTakenOneByOne(String client) throws Exception {
		// a standalone client on a sharded endpoint, as behind a proxy: a script of keys in several slots is CROSSSLOT
		try (RedisCluster sharded = RedisCluster.start(1, 0, Duration.ofSeconds(5))) {
			RedisStandaloneConfiguration configuration = new RedisStandaloneConfiguration("127.0.0.1",
					sharded.nodes().get(0).port());
			RedisConnectionFactory factory = client.equals("jedis") ? new JedisConnectionFactory(configuration)
					: new LettuceConnectionFactory(configuration);
			((InitializingBean) factory).afterPropertiesSet();
			((SmartLifecycle) factory).start();
			this.closeAfterTest.add(((DisposableBean) factory)::destroy);
			RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
			this.closeAfterTest.add(backend);
			DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults());
			this.closeAfterTest.add(template);
			String name = "batch-" + UUID.randomUUID();
			assertThat(backend.acquiresKeySets()).isTrue();
			try (Leases leases = template.acquireAll(name, List.of("a", "b"), LockOptions.defaults())) {
				assertThat(leases.leases()).hasSize(2).allSatisfy((lease) -> assertThat(lease.isValid()).isTrue());
			}
			assertThat(backend.acquiresKeySets()).as("the batch, after an error reply").isFalse();
			template.acquireAll(name, List.of("c", "d"), LockOptions.defaults()).close();
		}
	}

	@Test
	void anInterruptedThreadTakesNoKeyAndKeepsItsFlag() {
		AtomicLong batches = new AtomicLong();
		RedisLockBackend backend = new RedisLockBackend(redisFactory("jedis"), RedisLockBackend.DEFAULT_CHANNEL) {
			@Override
			public long @Nullable [] tryAcquireAll(List<HeldLock> locks) {
				batches.incrementAndGet();
				return super.tryAcquireAll(locks);
			}
		};
		this.closeAfterTest.add(backend);
		DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults());
		this.closeAfterTest.add(template);
		String name = "batch-" + UUID.randomUUID();
		Thread.currentThread().interrupt();
		try {
			assertThatExceptionOfType(LockInterruptedException.class)
				.isThrownBy(() -> template.acquireAll(name, List.of("a", "b"), LockOptions.defaults()));
			assertThat(Thread.currentThread().isInterrupted()).as("the interrupt flag").isTrue();
		}
		finally {
			Thread.interrupted();
		}
		assertThat(batches).as("batch calls").hasValue(0);
		assertThat(template.heldLeases()).isEmpty();
	}

	@Test
	void moreThanAThousandKeysTakeThePerKeyPath() {
		AtomicLong batches = new AtomicLong();
		RedisLockBackend backend = new RedisLockBackend(redisFactory("jedis"), RedisLockBackend.DEFAULT_CHANNEL) {
			@Override
			public long @Nullable [] tryAcquireAll(List<HeldLock> locks) {
				batches.incrementAndGet();
				return super.tryAcquireAll(locks);
			}
		};
		this.closeAfterTest.add(backend);
		DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults());
		this.closeAfterTest.add(template);
		String name = "batch-" + UUID.randomUUID();
		List<Integer> keys = IntStream.range(0, 1001).boxed().toList();
		try (Leases leases = template.acquireAll(name, keys, LockOptions.defaults())) {
			assertThat(leases.leases()).hasSize(1001);
			assertThat(batches).as("batch calls, 1,001 keys").hasValue(0);
		}
		template.acquireAll(name, keys.subList(0, 1000), LockOptions.defaults()).close();
		assertThat(batches).as("batch calls, 1,000 keys").hasValue(1);
	}

	@Test
	void onPostgreSqlTheBatchAndRenewalLockSharedRowsInOneOrderSoTheyNeverDeadlock() throws Exception {
		LockBackend holder = backend("postgresql");
		KeySetAcquisition taker = (KeySetAcquisition) backend("postgresql");
		String prefix = "batch-" + UUID.randomUUID();
		List<HeldLock> held = IntStream.range(0, 40)
			.mapToObj((i) -> new HeldLock(prefix + ":" + (100 + i), "holder-" + i, TTL))
			.toList();
		held.forEach((lock) -> assertThat(holder.tryAcquire(lock.key(), lock.owner(), TTL).acquired()).isTrue());
		// renewal and the batch given the keys in descending order: each must lock its rows in the
		// keys' byte order whatever order it is given (40P01 otherwise)
		List<HeldLock> reversed = new ArrayList<>(held);
		Collections.reverse(reversed);
		// the batch is given them reversed too: it must sort them itself
		List<HeldLock> attempts = reversed.stream().map((lock) -> new HeldLock(lock.key(), "taker-" + lock.owner(), TTL))
			.toList();
		long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
		CompletableFuture<Integer> renewals = CompletableFuture.supplyAsync(() -> {
			int rounds = 0;
			while (System.nanoTime() - end < 0) {
				assertThat(((LeaseRenewal) holder).renew(reversed)).hasSize(held.size());
				rounds++;
			}
			return rounds;
		});
		int batches = 0;
		while (System.nanoTime() - end < 0) {
			assertThat(taker.tryAcquireAll(attempts)).as("refused: every key is held").isNull();
			batches++;
		}
		assertThat(renewals.get(30, TimeUnit.SECONDS)).as("renewal rounds").isPositive();
		assertThat(batches).as("refused batches").isPositive();
		assertThat(this.deadlocks).as("statements aborted as deadlocked (40P01)").hasValue(0);
	}

	@Test
	void notOfferedOnRedisClusterNorWithReplicasToAcknowledge() {
		LettuceConnectionFactory cluster = new LettuceConnectionFactory(new RedisClusterConfiguration(List.of("127.0.0.1:1")));
		assertThat(new RedisLockBackend(cluster).acquiresKeySets()).isFalse();
		// asked anyway (the batch turned off by another call since this caller asked): "cannot", no failure
		List<HeldLock> locks = List.of(new HeldLock("k#0", "a", TTL), new HeldLock("k#1", "b", TTL));
		assertThat(new RedisLockBackend(cluster).tryAcquireFirst(locks)).isNull();
		assertThat(new RedisLockBackend(cluster).tryAcquireAll(locks)).isNull();
		LettuceConnectionFactory single = new LettuceConnectionFactory(new RedisStandaloneConfiguration("127.0.0.1", 1));
		assertThat(new RedisLockBackend(single, RedisLockBackend.DEFAULT_CHANNEL,
				new ReplicaAcks(1, Duration.ofMillis(100))).acquiresKeySets()).isFalse();
		assertThat(new RedisLockBackend(single).acquiresKeySets()).isTrue();
	}

	@ParameterizedTest
	@ValueSource(strings = { "redis", "jedis", "sentinel", "postgresql" })
	void aScanTakesTheFirstFreeSlotInOneCall(String server) {
		DefaultLockTemplate template = template(server);
		DefaultLockTemplate other = template(server);
		String name = "scan-" + UUID.randomUUID();
		warmUp(template, name);
		List<Lease> heldElsewhere = new ArrayList<>();
		for (int i = 0; i < 3; i++) {
			heldElsewhere.add(other.acquirePermit(name, null, 4, LockOptions.defaults().waitTime(Duration.ZERO)));
		}
		String free = IntStream.range(0, 4).mapToObj((slot) -> template.keyFor(name, null) + "#" + slot)
			.filter((key) -> heldElsewhere.stream().noneMatch((lease) -> lease.key().equals(key)))
			.findFirst().orElseThrow();
		// five times: from a random slot, a scan of one try per slot would pay one call only once in 4^5
		for (int i = 0; i < 5; i++) {
			long before = calls(server);
			try (Lease permit = template.acquirePermit(name, null, 4, LockOptions.defaults().waitTime(Duration.ZERO))) {
				assertThat(calls(server) - before).as("backend calls for the one free slot of 4").isOne();
				assertThat(permit.key()).isEqualTo(free);
				assertThat(permit.isValid()).isTrue();
				assertThat(permit.fencingToken()).isPositive();
				assertThat(template.heldLeases()).extracting(LeaseInfo::key).containsExactly(free);
				assertThat(other.tryAcquirePermit(name, null, 4, LockOptions.defaults().waitTime(Duration.ZERO)))
					.as("a fifth permit").isEmpty();
			}
			await().atMost(Duration.ofSeconds(5)).until(() -> template.releasesInFlight() == 0);
		}
		heldElsewhere.forEach(Lease::close);
	}

	@ParameterizedTest
	@ValueSource(strings = { "redis", "postgresql" })
	void slotsThisEngineHoldsLeaveTheScanInOneCallAndStayHeld(String server) {
		DefaultLockTemplate template = template(server);
		String name = "scan-" + UUID.randomUUID();
		warmUp(template, name);
		List<Lease> held = new ArrayList<>();
		for (int i = 0; i < 3; i++) {
			held.add(template.acquirePermit(name, null, 4, LockOptions.defaults().waitTime(Duration.ZERO)));
		}
		List<Long> tokens = held.stream().map(Lease::fencingToken).toList();
		// five times: from a random slot, a try per slot would pay one call only once in 4^5
		for (int i = 0; i < 5; i++) {
			long before = calls(server);
			try (Lease fourth = template.acquirePermit(name, null, 4, LockOptions.defaults().waitTime(Duration.ZERO))) {
				assertThat(calls(server) - before).as("backend calls for the one free slot, 3 held by this engine").isOne();
				assertThat(held).extracting(Lease::key).doesNotContain(fourth.key());
			}
			await().atMost(Duration.ofSeconds(5)).until(() -> template.releasesInFlight() == 0);
		}
		assertThat(held).allMatch(Lease::isValid);
		assertThat(held).extracting(Lease::fencingToken).isEqualTo(tokens);
		assertThat(template.heldLeases()).hasSize(3);
		held.forEach(Lease::close);
	}

	@ParameterizedTest
	@ValueSource(strings = { "redis", "postgresql" })
	void aScanSkipsAReservedSlotAsItsTryOnceWould(String server) {
		LockBackend backend = backend(server);
		KeySetAcquisition batch = (KeySetAcquisition) backend;
		String prefix = "scan-" + UUID.randomUUID();
		backend.tryAcquire(prefix + "#warm-up", "warm-up", TTL);
		String held = prefix + "#0";
		String reserved = prefix + "#1";
		assertThat(backend.tryAcquire(held, "holder", TTL).acquired()).isTrue();
		reserveForAnotherWaiter(server, reserved);
		List<HeldLock> slots = IntStream.range(0, 4).mapToObj((slot) -> new HeldLock(prefix + "#" + slot, "x" + slot, TTL))
			.toList();
		KeySetAcquisition.FirstTaken taken = batch.tryAcquireFirst(slots);
		assertThat(taken).isNotNull();
		assertThat(taken.index()).as("the first slot neither held nor reserved").isEqualTo(2);
		assertThat(backend.tryAcquire(prefix + "#3", "free", TTL).acquired()).as("the slot after it, left free").isTrue();
		assertThat(backend.tryAcquire(reserved, "y", TTL).acquired()).as("the reserved slot, still reserved").isFalse();
		assertThat(backend.release(prefix + "#2", "x2")).as("the slot taken, its owner's").isTrue();
		AcquireResult single = backend.tryAcquire(prefix + "#2", "z", TTL);
		assertThat(single.fencingToken()).as("its token, below the next single acquisition's")
			.isGreaterThan(taken.fencingToken());
		assertThat(batch.tryAcquireFirst(slots.subList(0, 2))).as("held and reserved: none taken").isNull();
		if (server.equals("redis")) {
			assertThat(redis.command("EXISTS", "{" + held + "}:waiters", "{" + reserved + "}:waiters"))
				.as("waiters recorded")
				.isEqualTo(0L);
		}
	}

	@Test
	void onPostgreSqlAScanWaitsForNoRowItFindsHeld() throws Exception {
		LockBackend backend = backend("postgresql");
		KeySetAcquisition batch = (KeySetAcquisition) backend;
		String prefix = "scan-" + UUID.randomUUID();
		assertThat(backend.tryAcquire(prefix + "#0", "holder", TTL).acquired()).isTrue();
		List<HeldLock> slots = IntStream.range(0, 2).mapToObj((slot) -> new HeldLock(prefix + "#" + slot, "x" + slot, TTL))
			.toList();
		try (Connection renewal = postgres().getConnection()) {
			// the held row locked by another statement (as a renewal does) until it ends: a scan that locked it would wait
			renewal.setAutoCommit(false);
			new JdbcTemplate(new SingleConnectionDataSource(renewal, true))
				.queryForList("SELECT 1 FROM holdfast_lock WHERE lock_key = ? FOR NO KEY UPDATE", prefix + "#0");
			long started = System.nanoTime();
			assertThat(batch.tryAcquireFirst(slots.subList(0, 1))).as("the held slot alone").isNull();
			FirstTaken taken = batch.tryAcquireFirst(slots);
			assertThat(taken).isNotNull();
			assertThat(taken.index()).as("the free slot after it").isEqualTo(1);
			assertThat(Duration.ofNanos(System.nanoTime() - started)).as("time to refuse and to take").isLessThan(
					Duration.ofSeconds(2));
			renewal.rollback();
		}
	}

	@Test
	void onPostgreSqlASlotTakenAfterTheScanReadItFreeIsPassedAndTheNextFreeOneTaken() throws Exception {
		KeySetAcquisition batch = (KeySetAcquisition) backend("postgresql");
		String prefix = "scan-" + UUID.randomUUID();
		List<HeldLock> slots = IntStream.range(0, 2).mapToObj((slot) -> new HeldLock(prefix + "#" + slot, "x" + slot, TTL))
			.toList();
		ExecutorService scanner = Executors.newSingleThreadExecutor();
		this.closeAfterTest.add(scanner::shutdownNow);
		try (Connection other = postgres().getConnection()) {
			// another acquisition's insert of #0, not committed yet: the scan reads #0 free and chooses it
			other.setAutoCommit(false);
			JdbcTemplate jdbc = new JdbcTemplate(new SingleConnectionDataSource(other, true));
			jdbc.update("INSERT INTO holdfast_lock VALUES (?, 'other', 1,"
					+ " (date_part('epoch', clock_timestamp()) * 1000000)::bigint + 10000000, 0, '')", prefix + "#0");
			int otherPid = jdbc.queryForObject("SELECT pg_backend_pid()", Integer.class);
			Future<@Nullable FirstTaken> scan = scanner.submit(() -> batch.tryAcquireFirst(slots));
			JdbcTemplate watcher = new JdbcTemplate(postgres());
			await().atMost(Duration.ofSeconds(10)).until(() -> watcher.queryForObject(
					"SELECT count(*) FROM pg_stat_activity WHERE ? = ANY(pg_blocking_pids(pid))", Integer.class,
					otherPid) > 0);
			other.commit();
			FirstTaken taken = scan.get(10, TimeUnit.SECONDS);
			assertThat(taken).as("#0 taken meanwhile, #1 free throughout").isNotNull();
			assertThat(taken.index()).isEqualTo(1);
		}
	}

	@Test
	void aResentScanAnswersAsItsFirstRunAndTakesNoOtherSlot() {
		LockBackend backend = backend("redis");
		KeySetAcquisition batch = (KeySetAcquisition) backend;
		String prefix = "scan-" + UUID.randomUUID();
		assertThat(backend.tryAcquire(prefix + "#0", "another", TTL).acquired()).isTrue();
		List<HeldLock> slots = IntStream.range(0, 3).mapToObj((slot) -> new HeldLock(prefix + "#" + slot, "x" + slot, TTL))
			.toList();
		KeySetAcquisition.FirstTaken first = batch.tryAcquireFirst(slots);
		assertThat(first).isNotNull();
		assertThat(first.index()).isEqualTo(1);
		// the first run's answer lost; meanwhile the slot before it was freed
		assertThat(backend.release(prefix + "#0", "another")).isTrue();
		assertThat(batch.tryAcquireFirst(slots)).as("the same request again").isEqualTo(first);
		assertThat(backend.tryAcquire(prefix + "#0", "free", TTL).acquired()).as("the freed slot, left free").isTrue();
		assertThat(backend.tryAcquire(prefix + "#2", "free", TTL).acquired()).as("the last slot, left free").isTrue();
	}

	@Test
	void aScanWhoseAnswerIsLostLeavesNoSlotTaken() {
		RedisLockBackend backend = new RedisLockBackend(redisFactory("lettuce"), RedisLockBackend.DEFAULT_CHANNEL) {
			@Override
			public @Nullable FirstTaken tryAcquireFirst(List<HeldLock> locks) {
				super.tryAcquireFirst(locks);
				throw new LockBackendException("the answer was lost", null);
			}
		};
		this.closeAfterTest.add(backend);
		DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults());
		this.closeAfterTest.add(template);
		String name = "scan-" + UUID.randomUUID();
		assertThatExceptionOfType(LockBackendException.class).isThrownBy(
				() -> template.tryAcquirePermit(name, null, 3, LockOptions.defaults().waitTime(Duration.ZERO)));
		assertThat(template.heldLeases()).isEmpty();
		LockBackend other = backend("redis");
		await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
			for (int slot = 0; slot < 3; slot++) {
				String key = template.keyFor(name, null) + "#" + slot;
				assertThat(other.tryAcquire(key, "other-" + slot, TTL).acquired()).as(key).isTrue();
				assertThat(other.release(key, "other-" + slot)).isTrue();
			}
		});
	}

	@Test
	void aScanInterruptedDuringItsCallThrowsLockInterruptedExceptionAndKeepsTheFlag() {
		RedisLockBackend backend = new RedisLockBackend(redisFactory("lettuce"), RedisLockBackend.DEFAULT_CHANNEL) {
			@Override
			public @Nullable FirstTaken tryAcquireFirst(List<HeldLock> locks) {
				// as Lettuce's command interrupted while waiting for its answer
				Thread.currentThread().interrupt();
				throw new LockBackendException("interrupted while waiting for the reply", null);
			}
		};
		this.closeAfterTest.add(backend);
		DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults());
		this.closeAfterTest.add(template);
		try {
			assertThatExceptionOfType(LockInterruptedException.class).isThrownBy(
					() -> template.tryAcquirePermit("scan-" + UUID.randomUUID(), null, 3,
							LockOptions.defaults().waitTime(Duration.ZERO)))
				.withRootCauseInstanceOf(LockBackendException.class);
			assertThat(Thread.currentThread().isInterrupted()).as("the interrupt flag").isTrue();
		}
		finally {
			Thread.interrupted();
		}
	}

	/** A guard, not evidence of SEM-7: it passes without it too, by the gate {@code acquiresKeySets()} (MKY-6). */
	@Test
	void onRedisClusterAScanNeverUsesTheOneCall() {
		try (RedisCluster sharded = RedisCluster.start(1, 0, Duration.ofSeconds(5))) {
			RedisClusterConfiguration configuration = new RedisClusterConfiguration(
					List.of("127.0.0.1:" + sharded.nodes().get(0).port()));
			LettuceConnectionFactory factory = new LettuceConnectionFactory(configuration);
			factory.afterPropertiesSet();
			factory.start();
			this.closeAfterTest.add(factory::destroy);
			RedisLockBackend backend = new RedisLockBackend(factory) {
				@Override
				public @Nullable FirstTaken tryAcquireFirst(List<HeldLock> locks) {
					throw new AssertionError("one call over slots of several hash slots");
				}
			};
			this.closeAfterTest.add(backend);
			DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults());
			this.closeAfterTest.add(template);
			String name = "scan-" + UUID.randomUUID();
			List<Lease> permits = new ArrayList<>();
			for (int i = 0; i < 3; i++) {
				permits.add(template.acquirePermit(name, null, 3, LockOptions.defaults().waitTime(Duration.ZERO)));
			}
			assertThat(permits).extracting(Lease::key).doesNotHaveDuplicates();
			assertThat(template.tryAcquirePermit(name, null, 3, LockOptions.defaults().waitTime(Duration.ZERO)))
				.isEmpty();
			permits.forEach(Lease::close);
		}
	}

	/** Leaves {@code key} reserved for a waiter of another owner, as a release that drew it does. */
	private void reserveForAnotherWaiter(String server, String key) {
		if (server.equals("redis")) {
			redis.command("SET", "{" + key + "}", "*another-waiter", "PX", "10000");
		}
		else {
			// as a release that drew another instance leaves the row: no owner, '>[<instance>][<other>]'
			new JdbcTemplate(postgres()).update("INSERT INTO holdfast_lock VALUES (?, '', 1,"
					+ " (date_part('epoch', clock_timestamp()) * 1000000)::bigint + 10000000, 0,"
					+ " '>[0123456789ab][ba9876543210]')", key);
		}
	}

	/** Takes and releases two other keys: scripts cached, the database known. */
	private static void warmUp(DefaultLockTemplate template, String name) {
		template.acquireAll(name, List.of("warm-up-1", "warm-up-2"), LockOptions.defaults()).close();
		await().atMost(Duration.ofSeconds(5)).until(() -> template.releasesInFlight() == 0);
	}

	private DefaultLockTemplate template(String server) {
		DefaultLockTemplate template = new DefaultLockTemplate(backend(server), LockSettings.defaults());
		this.closeAfterTest.add(template);
		return template;
	}

	private LockBackend backend(String server) {
		if (server.equals("postgresql")) {
			JdbcLockBackend backend = new JdbcLockBackend(postgres(), JdbcLockBackend.DEFAULT_TABLE_NAME,
					Duration.ofSeconds(5));
			this.closeAfterTest.add(backend);
			return backend;
		}
		RedisLockBackend backend = RedisLockBackend.of(redisFactory(server), RedisLockBackend.DEFAULT_CHANNEL);
		this.closeAfterTest.add(backend);
		return backend;
	}

	/** Script calls so far (Redis), or statements prepared (PostgreSQL). */
	private long calls(String server) {
		if (server.equals("postgresql")) {
			return this.statements.get();
		}
		RedisServer primary = server.equals("sentinel") ? sentinels.primary() : redis;
		long calls = 0;
		for (String command : List.of("cmdstat_evalsha", "cmdstat_eval")) {
			String stats = primary.info("commandstats", command);
			Matcher matcher = CALLS.matcher((stats != null) ? stats : "");
			calls += matcher.find() ? Long.parseLong(matcher.group(1)) : 0;
		}
		return calls;
	}

	private RedisConnectionFactory redisFactory(String server) {
		RedisConnectionFactory factory;
		if (server.equals("sentinel")) {
			if (sentinels == null) {
				sentinels = RedisSentinels.start(1, 1, Duration.ofSeconds(5));
			}
			RedisSentinelConfiguration configuration = new RedisSentinelConfiguration();
			configuration.master(RedisSentinels.MASTER_NAME);
			String[] hostPort = sentinels.sentinelAddresses().get(0).split(":");
			configuration.sentinel(hostPort[0], Integer.parseInt(hostPort[1]));
			factory = new LettuceConnectionFactory(configuration);
		}
		else {
			if (redis == null) {
				redis = RedisServer.start();
			}
			RedisStandaloneConfiguration configuration = new RedisStandaloneConfiguration("127.0.0.1", redis.port());
			factory = server.equals("jedis") ? new JedisConnectionFactory(configuration)
					: new LettuceConnectionFactory(configuration);
		}
		if (factory instanceof LettuceConnectionFactory lettuce) {
			lettuce.afterPropertiesSet();
			lettuce.start();
		}
		else {
			((JedisConnectionFactory) factory).afterPropertiesSet();
			((JedisConnectionFactory) factory).start();
		}
		this.closeAfterTest.add(((DisposableBean) factory)::destroy);
		return factory;
	}

	/** A pool on the shared PostgreSQL whose statements are counted. */
	private DataSource postgres() {
		HikariDataSource pool = PostgresServer.shared().newDataSource();
		this.closeAfterTest.add(pool);
		if (!schemaCreated) {
			new ResourceDatabasePopulator(new ClassPathResource("dev/holdfast/jdbc/schema-postgresql.sql"))
				.execute(pool);
			schemaCreated = true;
		}
		return (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { DataSource.class },
				(proxy, method, args) -> {
					Object result = invoke(pool, method, args);
					if (result instanceof Connection connection) {
						return Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { Connection.class },
								(p, m, a) -> {
									if (!m.getName().equals("prepareStatement")) {
										return invoke(connection, m, a);
									}
									this.statements.incrementAndGet();
									Object statement = invoke(connection, m, a);
									return Proxy.newProxyInstance(getClass().getClassLoader(),
											new Class<?>[] { PreparedStatement.class }, (sp, sm, sa) -> {
												try {
													return invoke(statement, sm, sa);
												}
												catch (SQLException ex) {
													if ("40P01".equals(ex.getSQLState())) {
														this.deadlocks.incrementAndGet();
													}
													throw ex;
												}
											});
								});
					}
					return result;
				});
	}

	private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
		try {
			return method.invoke(target, args);
		}
		catch (InvocationTargetException ex) {
			throw ex.getCause();
		}
	}

}
