package dev.holdfast.multi;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import org.springframework.beans.factory.DisposableBean;
import org.springframework.core.io.ClassPathResource;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.jdbc.datasource.init.ResourceDatabasePopulator;

import dev.holdfast.Lease;
import dev.holdfast.LockListener;
import dev.holdfast.LockOptions;
import dev.holdfast.actuate.LockMetricsListener;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.jdbc.JdbcLockBackend;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.redis.RedisLockBackend;
import dev.holdfast.spi.KeySetAcquisition;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.support.CompositeLockListener;
import dev.holdfast.test.server.PostgresServer;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.SoftAssertions.assertSoftly;
import static org.awaitility.Awaitility.await;

/**
 * A semaphore scan's refused try-once of each held slot counts as not acquired (docs/guarantees.md,
 * Semaphores; SEM-7), alike where the scan is one backend call (Redis, PostgreSQL) and where it is a
 * try per slot (memory): each refused slot's acquisition observation ends not acquired, the listener
 * is told {@code notAcquired} with the permit mode, and the {@code holdfast.lock.acquire} timer counts
 * it with outcome {@code not_acquired}.
 */
class SemaphoreScanNotAcquiredTests {

	private static final LockOptions ONCE = LockOptions.defaults().waitTime(Duration.ZERO);

	private static RedisServer redis;

	private static boolean schemaCreated;

	private final List<AutoCloseable> closeAfterTest = new ArrayList<>();

	private final MeterRegistry meters = new SimpleMeterRegistry();

	/** The keys whose acquisition observations ended not acquired, and the modes told to {@code notAcquired}. */
	private final List<String> observedNotAcquired = new CopyOnWriteArrayList<>();

	private final List<String> toldNotAcquired = new CopyOnWriteArrayList<>();

	private final String name = "scan-" + UUID.randomUUID();

	@AfterEach
	void close() throws Exception {
		for (int i = this.closeAfterTest.size() - 1; i >= 0; i--) {
			this.closeAfterTest.get(i).close();
		}
	}

	@AfterAll
	static void stopRedis() {
		if (redis != null) {
			redis.close();
		}
	}

	@ParameterizedTest
	@ValueSource(strings = { "memory", "redis", "postgresql" })
	void aScanOfThreeSlotsHeldElsewhereCountsThreeNotAcquired(String server) {
		LockBackend memory = new InMemoryLockBackend();
		DefaultLockTemplate holder = new DefaultLockTemplate(backend(server, memory), LockSettings.defaults());
		this.closeAfterTest.add(holder);
		DefaultLockTemplate observed = observed(server, memory);
		List<Lease> held = new ArrayList<>();
		for (int i = 0; i < 3; i++) {
			held.add(holder.acquirePermit(this.name, null, 3, ONCE));
		}
		assertThat(observed.tryAcquirePermit(this.name, null, 3, ONCE)).isEmpty();
		String semaphore = observed.keyFor(this.name, null);
		assertSoftly((softly) -> {
			softly.assertThat(this.observedNotAcquired).as("observations ended not acquired")
				.containsExactlyInAnyOrder(semaphore + "#0", semaphore + "#1", semaphore + "#2");
			softly.assertThat(this.toldNotAcquired).as("notAcquired told").containsExactly("permit", "permit", "permit");
			softly.assertThat(timed("not_acquired")).as("holdfast.lock.acquire not_acquired").isEqualTo(3);
		});
		held.forEach(Lease::close);
	}

	/** A scan that takes slot i tried the slots before it once each: refused, as a try per slot tells them. */
	@ParameterizedTest
	@ValueSource(strings = { "memory", "redis", "postgresql" })
	void theSlotsAScanTriedBeforeTheFreeOneCountAsNotAcquired(String server) {
		LockBackend memory = new InMemoryLockBackend();
		DefaultLockTemplate holder = new DefaultLockTemplate(backend(server, memory), LockSettings.defaults());
		this.closeAfterTest.add(holder);
		DefaultLockTemplate observed = observed(server, memory);
		Lease first = holder.acquireSlot(this.name, null, 0, ONCE);
		Lease second = holder.acquireSlot(this.name, null, 1, ONCE);
		String semaphore = observed.keyFor(this.name, null);
		try (Lease taken = observed.acquireFirstSlot(this.name, null, List.of(0, 1, 2, 3), ONCE)) {
			assertThat(taken).isNotNull();
			assertThat(taken.key()).isEqualTo(semaphore + "#2");
		}
		assertSoftly((softly) -> {
			softly.assertThat(this.observedNotAcquired).as("observations ended not acquired")
				.containsExactlyInAnyOrder(semaphore + "#0", semaphore + "#1");
			softly.assertThat(this.toldNotAcquired).as("notAcquired told").containsExactly("permit", "permit");
			softly.assertThat(timed("not_acquired")).as("holdfast.lock.acquire not_acquired").isEqualTo(2);
			softly.assertThat(timed("acquired")).as("holdfast.lock.acquire acquired").isEqualTo(1);
		});
		first.close();
		second.close();
	}

	/**
	 * The engine observed, on the one-call path (SEM-7) on Redis and PostgreSQL once warmed up (scripts
	 * cached, the database known), on the per-slot path on memory.
	 */
	private DefaultLockTemplate observed(String server, LockBackend memory) {
		LockBackend backend = backend(server, memory);
		LockListener listener = CompositeLockListener.of(List.of(new Recording(), new LockMetricsListener(this.meters)));
		DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults(), listener);
		this.closeAfterTest.add(template);
		template.acquireAll("warm-up-" + UUID.randomUUID(), List.of("a", "b"), LockOptions.defaults()).close();
		await().atMost(Duration.ofSeconds(5)).until(() -> template.releasesInFlight() == 0);
		assertThat(backend instanceof KeySetAcquisition batch && batch.acquiresKeySets())
			.as("the scan in one backend call").isEqualTo(!server.equals("memory"));
		return template;
	}

	private long timed(String outcome) {
		return this.meters.find(LockMetricsListener.ACQUIRE)
			.tags("name", this.name, "mode", "permit", "outcome", outcome)
			.timers()
			.stream()
			.mapToLong(Timer::count)
			.sum();
	}

	private LockBackend backend(String server, LockBackend memory) {
		if (server.equals("memory")) {
			return memory;
		}
		if (server.equals("postgresql")) {
			HikariDataSource pool = PostgresServer.shared().newDataSource();
			this.closeAfterTest.add(pool);
			if (!schemaCreated) {
				new ResourceDatabasePopulator(new ClassPathResource("dev/holdfast/jdbc/schema-postgresql.sql"))
					.execute(pool);
				schemaCreated = true;
			}
			JdbcLockBackend backend = new JdbcLockBackend(pool, JdbcLockBackend.DEFAULT_TABLE_NAME, Duration.ofSeconds(5));
			this.closeAfterTest.add(backend);
			return backend;
		}
		if (redis == null) {
			redis = RedisServer.start();
		}
		LettuceConnectionFactory factory = new LettuceConnectionFactory(
				new RedisStandaloneConfiguration("127.0.0.1", redis.port()));
		factory.afterPropertiesSet();
		factory.start();
		this.closeAfterTest.add(((DisposableBean) factory)::destroy);
		RedisLockBackend backend = RedisLockBackend.of(factory, RedisLockBackend.DEFAULT_CHANNEL);
		this.closeAfterTest.add(backend);
		return backend;
	}

	/** Records the lock's acquisitions that ended not acquired, as their observations and as told. */
	private final class Recording implements LockListener {

		@Override
		public LockObservation acquiring(String lock, String key, String backend) {
			return lock.equals(SemaphoreScanNotAcquiredTests.this.name) ? new NotAcquired(key) : LockObservation.NONE;
		}

		@Override
		public void notAcquired(String lock, String backend, String mode, Duration waited) {
			if (lock.equals(SemaphoreScanNotAcquiredTests.this.name)) {
				SemaphoreScanNotAcquiredTests.this.toldNotAcquired.add(mode);
			}
		}

		private final class NotAcquired implements LockObservation {

			private final String key;

			NotAcquired(String key) {
				this.key = key;
			}

			@Override
			public void notAcquired() {
				SemaphoreScanNotAcquiredTests.this.observedNotAcquired.add(this.key);
			}

			@Override
			public void acquired(long fencingToken) {
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
			}

			@Override
			public Observation hold() {
				return Observation.NOOP;
			}

			@Override
			public Observation.Scope openScope() {
				return Observation.Scope.NOOP;
			}

		}

	}

}
