package dev.holdfast.jdbc;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

import org.springframework.jdbc.core.JdbcTemplate;

import dev.holdfast.TestThreads;
import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.test.server.PostgresServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Release announcements of {@link JdbcLockBackend} on a real PostgreSQL: a refused attempt marks
 * the holder's row, its release notifies the table's channel, and each backend listens on one
 * connection of its own pool, which it gives back when closed and replaces when it is lost.
 */
class PostgresReleaseEventsTests {

	private final List<AutoCloseable> closeables = new ArrayList<>();

	@BeforeAll
	static void createSchema() {
		try (HikariDataSource dataSource = PostgresServer.shared().newDataSource()) {
			AbstractJdbcBackendTests.createSchema(dataSource, "postgresql");
		}
	}

	@AfterEach
	void close() throws Exception {
		for (int i = this.closeables.size() - 1; i >= 0; i--) {
			this.closeables.get(i).close();
		}
	}

	private HikariDataSource dataSource() {
		HikariDataSource dataSource = PostgresServer.shared().newDataSource();
		this.closeables.add(dataSource);
		return dataSource;
	}

	private JdbcLockBackend backend(HikariDataSource dataSource) {
		return backend(dataSource, true);
	}

	private JdbcLockBackend backend(HikariDataSource dataSource, boolean fairHandoff) {
		JdbcLockBackend backend = new JdbcLockBackend(dataSource, JdbcLockBackend.DEFAULT_TABLE_NAME,
				Duration.ofSeconds(2));
		backend.setFairHandoff(fairHandoff);
		backend.checkTable();
		this.closeables.add(backend);
		return backend;
	}

	private DefaultLockTemplate template(JdbcLockBackend backend, Duration pollInterval) {
		DefaultLockTemplate template = new DefaultLockTemplate(backend,
				LockSettings.defaults().withPollInterval(pollInterval));
		this.closeables.add(template);
		return template;
	}

	private static String name() {
		return "events-" + UUID.randomUUID();
	}

	@Test
	void releaseIsAnnouncedOnlyAfterARefusedAttemptMarkedIt() throws Exception {
		JdbcLockBackend first = backend(dataSource());
		JdbcLockBackend second = backend(dataSource());
		String channel = PostgresReleaseListener.releaseChannel("public." + JdbcLockBackend.DEFAULT_TABLE_NAME);
		try (Connection listening = dataSource().getConnection()) {
			try (Statement statement = listening.createStatement()) {
				statement.execute("LISTEN " + channel);
			}
			PGConnection pg = listening.unwrap(PGConnection.class);
			String quiet = "quiet-" + UUID.randomUUID();
			assertThat(first.tryAcquire(quiet, "a", Duration.ofSeconds(10)).acquired()).isTrue();
			assertThat(first.release(quiet, "a")).isTrue();
			String awaited = "awaited-" + UUID.randomUUID();
			assertThat(first.tryAcquire(awaited, "a", Duration.ofSeconds(10)).acquired()).isTrue();
			assertThat(second.tryAcquire(awaited, "b", Duration.ofSeconds(10)).acquired()).isFalse();
			assertThat(second.tryAcquire(awaited, "b", Duration.ofSeconds(10)).holderRemainingMillis())
				.as("the mark keeps the holder's remaining time")
				.isBetween(1L, 10_000L);
			assertThat(first.release(awaited, "a")).isTrue();
			List<String> keys = new ArrayList<>();
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(2);
			while (System.nanoTime() < deadline) {
				PGNotification[] notifications = pg.getNotifications(100);
				if (notifications != null) {
					for (PGNotification notification : notifications) {
						// Empty: a listener's check of its own connection (another test's), not a release.
						if (channel.equals(notification.getName()) && !notification.getParameter().isEmpty()) {
							keys.add(notification.getParameter());
						}
					}
				}
			}
			assertThat(keys).as("one announcement, of the awaited lock only").containsExactly(awaited);
			assertThat(second.tryAcquire(awaited, "b", Duration.ofSeconds(10)).acquired()).isTrue();
			assertThat(second.release(awaited, "b")).isTrue();
		}
	}

	/**
	 * With fair handoff off, a thread of the releasing process that waits for the key makes the
	 * release announced (to every process, its own included), though no attempt was refused on
	 * the row: that thread starts from the announcement, as waiters of other processes do. Without
	 * such a thread, a release nobody waited for announces nothing. (With fair handoff on, the
	 * default, the release's answer wakes that thread instead: PostgresInstanceHandoffTests.)
	 */
	@Test
	void releaseWithALocalWaiterIsAnnouncedToItsOwnProcessToo() throws Exception {
		JdbcLockBackend backend = backend(dataSource(), false);
		DefaultLockTemplate template = template(backend, Duration.ofSeconds(5));
		template.prepare();
		await().atMost(Duration.ofSeconds(5)).until(backend::isListening);
		String channel = PostgresReleaseListener.releaseChannel("public." + JdbcLockBackend.DEFAULT_TABLE_NAME);
		try (Connection listening = dataSource().getConnection()) {
			try (Statement statement = listening.createStatement()) {
				statement.execute("LISTEN " + channel);
			}
			PGConnection pg = listening.unwrap(PGConnection.class);
			String alone = name();
			template.acquire(alone, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5))).close();
			String name = name();
			Lease held = template.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5)));
			AtomicLong acquiredAt = new AtomicLong();
			Thread waiter = new Thread(() -> {
				try (Lease lease = template.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(20)))) {
					acquiredAt.set(System.nanoTime());
				}
			});
			waiter.start();
			awaitParked(waiter);
			long releasedAt = System.nanoTime();
			held.close();
			waiter.join(15_000);
			assertThat(acquiredAt.get()).isNotZero();
			assertThat(Duration.ofNanos(acquiredAt.get() - releasedAt)).isLessThan(Duration.ofSeconds(1));
			List<String> keys = new ArrayList<>();
			long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(1);
			while (System.nanoTime() < deadline) {
				PGNotification[] notifications = pg.getNotifications(100);
				if (notifications != null) {
					for (PGNotification notification : notifications) {
						// Empty: the listener's check of its own connection, not a release.
						if (!notification.getParameter().isEmpty()) {
							keys.add(notification.getParameter());
						}
					}
				}
			}
			assertThat(keys).as("only the release that a thread of this process waited for")
				.containsExactly("holdfast:" + name);
		}
	}

	@Test
	void waiterOfAnotherBackendIsWokenByTheAnnouncementNotByItsPoll() throws Exception {
		Duration poll = Duration.ofSeconds(5);
		DefaultLockTemplate first = template(backend(dataSource()), poll);
		JdbcLockBackend secondBackend = backend(dataSource());
		DefaultLockTemplate second = template(secondBackend, poll);
		assertThat(secondBackend.announcesReleases()).isTrue();
		String name = name();
		for (int round = 0; round < 3; round++) {
			Lease held = first.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5)));
			AtomicLong acquiredAt = new AtomicLong();
			Thread waiter = new Thread(() -> {
				try (Lease lease = second.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(20)))) {
					acquiredAt.set(System.nanoTime());
				}
			});
			waiter.start();
			await().atMost(Duration.ofSeconds(5)).until(secondBackend::isListening);
			// Parked for 300 ms: past the attempt, the subscription and the second attempt.
			TestThreads.awaitParked(waiter, Duration.ofMillis(300));
			long releasedAt = System.nanoTime();
			held.close();
			waiter.join(15_000);
			assertThat(acquiredAt.get()).isNotZero();
			assertThat(Duration.ofNanos(acquiredAt.get() - releasedAt)).as("woken after the release, polling every 5s")
				.isLessThan(Duration.ofSeconds(1));
		}
	}

	@Test
	void oneListeningConnectionPerBackendGivenBackWhenClosed() throws Exception {
		HikariDataSource pool = dataSource();
		// One connection: the one given back is the one the test then borrows and looks at.
		pool.setMaximumPoolSize(1);
		JdbcLockBackend backend = backend(pool);
		List<AutoCloseable> subscriptions = new ArrayList<>();
		AtomicInteger delivered = new AtomicInteger();
		for (int i = 0; i < 5; i++) {
			subscriptions.add(backend.subscribe((key) -> delivered.incrementAndGet()));
		}
		await().atMost(Duration.ofSeconds(5)).until(backend::isListening);
		assertThat(pool.getHikariPoolMXBean().getActiveConnections()).as("one connection for all listeners").isOne();
		int pid = listenerPid(backend);
		for (AutoCloseable subscription : subscriptions) {
			subscription.close();
		}
		assertThat(backend.isListening()).isFalse();
		assertThat(pool.getHikariPoolMXBean().getActiveConnections()).as("given back with the last listener").isZero();
		assertThat(listeningChannels(pool, pid)).as("the connection back in the pool does not listen").isZero();
		backend.subscribe((key) -> delivered.incrementAndGet());
		await().atMost(Duration.ofSeconds(5)).until(backend::isListening);
		pid = listenerPid(backend);
		backend.close();
		assertThat(pool.getHikariPoolMXBean().getActiveConnections()).as("given back when the backend closes").isZero();
		assertThat(listeningChannels(pool, pid)).isZero();
	}

	/**
	 * The channels that the pool's one connection listens on, if it is still the session
	 * {@code pid} that listened (else it was aborted, which listens on nothing either).
	 */
	private static long listeningChannels(HikariDataSource pool, int pid) throws Exception {
		try (Connection connection = pool.getConnection(); Statement statement = connection.createStatement();
				java.sql.ResultSet rs = statement.executeQuery(
						"SELECT pg_backend_pid(), (SELECT count(*) FROM pg_listening_channels())")) {
			rs.next();
			return (rs.getInt(1) == pid) ? rs.getLong(2) : 0;
		}
	}

	@Test
	void lostListeningConnectionFallsBackToPollingAndIsReplaced() throws Exception {
		Duration poll = Duration.ofSeconds(5);
		DefaultLockTemplate first = template(backend(dataSource()), poll);
		JdbcLockBackend secondBackend = backend(dataSource());
		DefaultLockTemplate second = template(secondBackend, poll);
		String name = name();
		second.prepare();
		await().atMost(Duration.ofSeconds(5)).until(secondBackend::isListening);
		JdbcTemplate operator = new JdbcTemplate(dataSource());
		// Only this backend's listening session: other tests' sessions on the shared server live on.
		int pid = listenerPid(secondBackend);
		assertThat(operator.queryForObject("SELECT pg_terminate_backend(?)", Boolean.class, pid)).isTrue();
		Lease held = first.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5)));
		AtomicLong acquiredAt = new AtomicLong();
		Thread waiter = new Thread(() -> {
			try (Lease lease = second.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(20)))) {
				acquiredAt.set(System.nanoTime());
			}
		});
		waiter.start();
		await().atMost(Duration.ofSeconds(2)).until(() -> !secondBackend.announcesReleases());
		TestThreads.awaitParked(waiter, Duration.ofMillis(300));
		long releasedAt = System.nanoTime();
		held.close();
		waiter.join(15_000);
		assertThat(acquiredAt.get()).isNotZero();
		assertThat(Duration.ofNanos(acquiredAt.get() - releasedAt))
			.as("a waiter polls (5 ms doubling) while the listening connection is lost, not every 5s")
			.isLessThan(Duration.ofSeconds(1));
		await().atMost(Duration.ofSeconds(10)).until(() -> secondBackend.announcesReleases() && secondBackend.isListening());
	}

	/**
	 * Two backends on one real PostgreSQL, threads of each taking the lock for a moment and others
	 * giving up at about the moment it is released to them, many times: never two holders, and
	 * fencing tokens only grow.
	 */
	@Test
	void waitersGivingUpAtTheHandoffNeverMakeTwoHolders() throws Exception {
		DefaultLockTemplate[] templates = { template(backend(dataSource()), Duration.ofMillis(50)),
				template(backend(dataSource()), Duration.ofMillis(50)) };
		String name = name();
		AtomicInteger inside = new AtomicInteger();
		AtomicLong lastToken = new AtomicLong(Long.MIN_VALUE);
		AtomicInteger acquisitions = new AtomicInteger();
		AtomicInteger timeouts = new AtomicInteger();
		AtomicReference<String> violation = new AtomicReference<>();
		long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(6);
		List<Thread> threads = new ArrayList<>();
		CountDownLatch start = new CountDownLatch(1);
		for (int t = 0; t < 6; t++) {
			DefaultLockTemplate template = templates[t % 2];
			threads.add(new Thread(() -> {
				try {
					start.await();
					while (System.nanoTime() < end && violation.get() == null) {
						ThreadLocalRandom random = ThreadLocalRandom.current();
						// Wait times around the hold times, so that waiters give up just as the lock
						// is released to them.
						Duration wait = Duration.ofMillis(random.nextInt(0, 4));
						Optional<Lease> taken = template.tryAcquire(name, null,
								LockOptions.defaults().waitTime(wait).leaseTime(Duration.ofSeconds(10)));
						if (taken.isEmpty()) {
							timeouts.incrementAndGet();
							continue;
						}
						try (Lease lease = taken.get()) {
							if (inside.incrementAndGet() != 1) {
								violation.compareAndSet(null, "two holders at once");
							}
							long token = lease.fencingToken();
							long previous = lastToken.getAndSet(token);
							if (token <= previous) {
								violation.compareAndSet(null, "token " + token + " after " + previous);
							}
							acquisitions.incrementAndGet();
							Thread.sleep(random.nextInt(0, 3));
							inside.decrementAndGet();
						}
					}
				}
				catch (Throwable ex) {
					violation.compareAndSet(null, String.valueOf(ex));
				}
			}));
		}
		threads.forEach(Thread::start);
		start.countDown();
		for (Thread thread : threads) {
			thread.join(30_000);
			assertThat(thread.isAlive()).as("a thread still waits 30 s after the end").isFalse();
		}
		assertThat(violation.get()).isNull();
		assertThat(acquisitions.get()).isGreaterThan(100);
		assertThat(timeouts.get()).as("waiters gave up while others held the lock").isGreaterThan(100);
	}

	@Test
	void everySpellingOfTheTableNameListensOnOneChannel() {
		List<String> channels = new ArrayList<>();
		for (String table : List.of("holdfast_lock", "public.holdfast_lock", "HOLDFAST_LOCK", "Public.Holdfast_Lock")) {
			JdbcLockBackend backend = new JdbcLockBackend(dataSource(), table, Duration.ofSeconds(2));
			this.closeables.add(backend);
			backend.checkTable();
			channels.add(((PostgreSqlDialect) backend.connections().dialect()).channel());
		}
		assertThat(channels).containsOnly(PostgresReleaseListener.releaseChannel("public.holdfast_lock"));
	}

	@Test
	void releaseEventsTurnedOffKeepNoConnection() throws Exception {
		HikariDataSource pool = dataSource();
		JdbcLockBackend backend = new JdbcLockBackend(pool, JdbcLockBackend.DEFAULT_TABLE_NAME, Duration.ofSeconds(2));
		backend.setReleaseEvents(false);
		backend.checkTable();
		this.closeables.add(backend);
		assertThat(backend.tryAcquire(name(), "a", Duration.ofSeconds(1)).acquired()).isTrue();
		assertThat(backend.announcesReleases()).isFalse();
		backend.subscribe((key) -> {
		});
		await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> !backend.isListening());
		assertThat(pool.getHikariPoolMXBean().getActiveConnections()).as("no connection kept for LISTEN").isZero();
	}

	@Test
	void releaseSucceedsWhenItsAnnouncementFails() throws Exception {
		JdbcTemplate operator = new JdbcTemplate(dataSource());
		operator.execute("CREATE SCHEMA IF NOT EXISTS holdfast_broken");
		// As a full notification queue, or a PostgreSQL-compatible database without pg_notify.
		operator.execute("CREATE OR REPLACE FUNCTION holdfast_broken.pg_notify(text, text) RETURNS void"
				+ " LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'too many notifications in the NOTIFY queue'; END $$");
		HikariDataSource brokenPool = PostgresServer.shared().newDataSource();
		brokenPool.setJdbcUrl(PostgresServer.shared().jdbcUrl()
				+ "?options=-c%20search_path%3Dholdfast_broken,public,pg_catalog");
		this.closeables.add(brokenPool);
		JdbcLockBackend broken = backend(brokenPool);
		JdbcLockBackend other = backend(dataSource());
		String name = name();
		assertThat(broken.tryAcquire(name, "a", Duration.ofSeconds(10)).acquired()).isTrue();
		assertThat(other.tryAcquire(name, "b", Duration.ofSeconds(10)).acquired()).as("refused: marks the row").isFalse();
		assertThat(broken.release(name, "a")).isTrue();
		assertThat(other.tryAcquire(name, "b", Duration.ofSeconds(10)).acquired()).isTrue();
		assertThat(other.release(name, "b")).isTrue();
		assertThat(broken.tryAcquire(name, "c", Duration.ofSeconds(10)).acquired()).isTrue();
		assertThat(broken.release(name, "c")).isTrue();
		assertThat(other.tryAcquire(name, "d", Duration.ofSeconds(10)).acquired()).isTrue();
		assertThat(other.release(name, "d")).isTrue();
	}

	@Test
	void refusedAttemptDoesNotRewriteAMarkedRow() {
		JdbcLockBackend first = backend(dataSource());
		JdbcLockBackend second = backend(dataSource());
		JdbcTemplate operator = new JdbcTemplate(dataSource());
		String name = name();
		assertThat(first.tryAcquire(name, "a", Duration.ofSeconds(10)).acquired()).isTrue();
		long remaining = second.tryAcquire(name, "b", Duration.ofSeconds(10)).holderRemainingMillis();
		assertThat(remaining).isBetween(1L, 10_000L);
		String version = operator.queryForObject("SELECT xmin::text || ctid::text FROM holdfast_lock WHERE lock_key = ?",
				String.class, name);
		assertThat(operator.queryForObject("SELECT holder FROM holdfast_lock WHERE lock_key = ?", String.class, name))
			.startsWith(PostgreSqlDialect.MARK);
		for (int i = 0; i < 3; i++) {
			long again = second.tryAcquire(name, "b", Duration.ofSeconds(10)).holderRemainingMillis();
			assertThat(again).as("the remaining time, read without a write").isBetween(1L, remaining);
		}
		assertThat(operator.queryForObject("SELECT xmin::text || ctid::text FROM holdfast_lock WHERE lock_key = ?",
				String.class, name))
			.as("no new row version")
			.isEqualTo(version);
		assertThat(first.release(name, "a")).isTrue();
		assertThat(second.tryAcquire(name, "b", Duration.ofSeconds(10)).acquired()).isTrue();
		assertThat(operator.queryForObject("SELECT holder FROM holdfast_lock WHERE lock_key = ?", String.class, name))
			.as("the new holder's row is not marked")
			.doesNotStartWith(PostgreSqlDialect.MARK);
		assertThat(second.release(name, "b")).isTrue();
	}

	/**
	 * An announcement reaches the subscriber without the driver's look for more notifications:
	 * pgjdbc's {@code getNotifications(timeout)}, after a notification, reads the socket with a
	 * 1 ms timeout before it returns, so without {@link PostgresNotificationWait} no delivery
	 * comes sooner than 1 ms after the {@code pg_notify} statement was sent (the timeout cannot
	 * fire early). With it, a delivery, from sending the statement to the subscriber, takes about
	 * the statement's round trip (0.1–0.4 ms): of up to 300, the first under 1 ms ends the test, so
	 * that a busy machine that delays some deliveries does not fail it. Without the fix none can be.
	 */
	@Test
	void announcementReachesTheSubscriberWithoutTheDriversTrailingWait() throws Exception {
		JdbcLockBackend backend = backend(dataSource());
		String channel = PostgresReleaseListener.releaseChannel("public." + JdbcLockBackend.DEFAULT_TABLE_NAME);
		String prefix = "delivery-" + UUID.randomUUID() + "-";
		AtomicReference<String> expected = new AtomicReference<>("");
		AtomicReference<CountDownLatch> heard = new AtomicReference<>(new CountDownLatch(1));
		AtomicLong heardAt = new AtomicLong();
		this.closeables.add(backend.subscribe((key) -> {
			if (key.equals(expected.get())) {
				heardAt.set(System.nanoTime());
				heard.get().countDown();
			}
		}));
		await().atMost(Duration.ofSeconds(5)).until(backend::isListening);
		try (Connection notifying = dataSource().getConnection(); Statement statement = notifying.createStatement()) {
			long least = Long.MAX_VALUE;
			for (int i = 0; i < 300 && least >= TimeUnit.MILLISECONDS.toNanos(1); i++) {
				String key = prefix + i;
				CountDownLatch latch = new CountDownLatch(1);
				heard.set(latch);
				expected.set(key);
				long sent = System.nanoTime();
				statement.execute("SELECT pg_notify('" + channel + "', '" + key + "')");
				assertThat(latch.await(5, TimeUnit.SECONDS)).as("delivery of %s", key).isTrue();
				least = Math.min(least, heardAt.get() - sent);
			}
			assertThat(TimeUnit.NANOSECONDS.toMicros(least)).as("least delivery time, µs").isLessThan(1000);
		}
	}

	/** The server process of the backend's listening connection, once it listens. */
	private static int listenerPid(JdbcLockBackend backend) {
		PostgresReleaseListener listener = backend.releaseListener();
		assertThat(listener).isNotNull();
		await().atMost(Duration.ofSeconds(5)).until(() -> listener.backendPid() != 0);
		return listener.backendPid();
	}

	@Test
	void waiterAsleepForAnAnnouncementIsWokenWhenTheListeningConnectionIsLost() throws Exception {
		Duration poll = Duration.ofSeconds(5);
		DefaultLockTemplate first = template(backend(dataSource()), poll);
		JdbcLockBackend secondBackend = backend(dataSource());
		DefaultLockTemplate second = template(secondBackend, poll);
		String name = name();
		second.prepare();
		int pid = listenerPid(secondBackend);
		Lease held = first.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(5)));
		AtomicLong acquiredAt = new AtomicLong();
		Thread waiter = new Thread(() -> {
			try (Lease lease = second.acquire(name, null, LockOptions.defaults().waitTime(Duration.ofSeconds(20)))) {
				acquiredAt.set(System.nanoTime());
			}
		});
		waiter.start();
		// Asleep in notifying mode: its pause is 2.5-5 s, unless something wakes it.
		TestThreads.awaitParked(waiter, Duration.ofMillis(300));
		JdbcTemplate operator = new JdbcTemplate(dataSource());
		assertThat(operator.queryForObject("SELECT pg_terminate_backend(?)", Boolean.class, pid)).isTrue();
		long releasedAt = System.nanoTime();
		// Announced to nobody in the second backend: its listening connection is gone.
		held.close();
		waiter.join(15_000);
		assertThat(acquiredAt.get()).isNotZero();
		assertThat(Duration.ofNanos(acquiredAt.get() - releasedAt))
			.as("the loss of the listening connection wakes the waiter, which polls")
			.isLessThan(Duration.ofSeconds(1));
	}

	@Test
	void listenerThatThrowsAnErrorDoesNotEndTheListening() throws Exception {
		JdbcLockBackend backend = backend(dataSource());
		List<String> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
		backend.subscribe((key) -> {
			throw new AssertionError("a listener that fails");
		});
		backend.subscribe(heard::add);
		await().atMost(Duration.ofSeconds(5)).until(backend::isListening);
		JdbcTemplate operator = new JdbcTemplate(dataSource());
		String channel = PostgresReleaseListener.releaseChannel("public." + JdbcLockBackend.DEFAULT_TABLE_NAME);
		String one = name();
		String two = name();
		operator.queryForList("SELECT pg_notify(?, ?)", channel, one);
		await().atMost(Duration.ofSeconds(5)).until(() -> heard.contains(one));
		operator.queryForList("SELECT pg_notify(?, ?)", channel, two);
		await().atMost(Duration.ofSeconds(5)).until(() -> heard.contains(two));
		assertThat(backend.isListening()).isTrue();
		assertThat(backend.releaseListener().state()).isEqualTo(PostgresReleaseListener.State.LISTENING);
	}

	@Test
	void connectionThatNeverDeliversNotificationsTurnsAnnouncementsOff() throws Exception {
		HikariDataSource pool = dataSource();
		// As behind a transaction pooler: LISTEN is accepted, and nothing is ever delivered.
		DataSource deaf = deafDataSource(pool);
		JdbcLockBackend backend = new JdbcLockBackend(deaf, JdbcLockBackend.DEFAULT_TABLE_NAME, Duration.ofSeconds(2));
		backend.checkTable();
		this.closeables.add(backend);
		assertThat(backend.tryAcquire(name(), "a", Duration.ofSeconds(1)).acquired()).isTrue();
		assertThat(backend.announcesReleases()).isTrue();
		AtomicInteger interrupted = new AtomicInteger();
		backend.subscribe((key) -> {
		}, interrupted::incrementAndGet);
		// Three connections, 2 s each for the check that never comes, 1 s and 2 s apart.
		await().atMost(Duration.ofSeconds(30)).until(() -> backend.releaseListener().state() == PostgresReleaseListener.State.UNSUPPORTED);
		assertThat(backend.announcesReleases()).isFalse();
		assertThat(backend.isListening()).isFalse();
		assertThat(interrupted.get()).as("waiters told to look again").isPositive();
		await().atMost(Duration.ofSeconds(5)).until(() -> pool.getHikariPoolMXBean().getActiveConnections() == 0);
	}

	/** Connections of {@code pool} on which {@code LISTEN} is accepted but does nothing. */
	private static DataSource deafDataSource(HikariDataSource pool) {
		return new org.springframework.jdbc.datasource.DelegatingDataSource(pool) {
			@Override
			public Connection getConnection() throws java.sql.SQLException {
				Connection connection = super.getConnection();
				return (Connection) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { Connection.class },
						(proxy, method, args) -> {
							Object result = invoke(method, connection, args);
							if (result instanceof Statement statement && method.getName().equals("createStatement")) {
								return Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] { Statement.class },
										(p, m, a) -> {
											if (m.getName().equals("execute") && a != null && a.length == 1
													&& String.valueOf(a[0]).startsWith("LISTEN ")) {
												a = new Object[] { "SELECT 1" };
											}
											return invoke(m, statement, a);
										});
							}
							return result;
						});
			}
		};
	}

	private static Object invoke(Method method, Object target, Object[] args) throws Throwable {
		try {
			return method.invoke(target, args);
		}
		catch (InvocationTargetException ex) {
			throw ex.getCause();
		}
	}

	private static void awaitParked(Thread thread) {
		TestThreads.awaitParked(thread, Duration.ofMillis(100));
	}

}
