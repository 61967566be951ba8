package dev.holdfast.test;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import javax.sql.DataSource;

import org.junit.jupiter.api.Test;

import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.data.redis.connection.RedisConnectionFactory;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockContext;
import dev.holdfast.LockOptions;
import dev.holdfast.LockTemplate;
import dev.holdfast.OnLocked;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.LockBackend;
import dev.holdfast.test.LockRecorder.Acquisition;
import dev.holdfast.test.LockRecorder.Outcome;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;

/**
 * {@link LockRecorder} in a real application context with Holdfast's auto-configuration, as an
 * application's test uses it: {@code holdfast.backend=memory} while the application also has a
 * {@code DataSource} (embedded H2) and a Redis connection factory (to a port where nothing listens).
 */
@SpringBootTest(classes = LockRecorderTests.App.class,
		properties = { "holdfast.backend=memory", "spring.data.redis.port=1" })
class LockRecorderTests {

	@Autowired
	private Orders orders;

	@Autowired
	private LockRecorder recorder;

	@Autowired
	private LockTemplate locks;

	@Autowired
	private ApplicationContext context;

	@Test
	void eachTestStartsWithAnEmptyRecorder() {
		assertThat(this.recorder.acquisitions()).isEmpty();
		this.orders.fulfil(1);
	}

	@Test
	void eachTestStartsWithAnEmptyRecorderToo() {
		// whichever of the two runs second fails if the recorder is not cleared between tests
		assertThat(this.recorder.acquisitions()).isEmpty();
		this.orders.fulfil(2);
	}

	@Test
	void theMemoryBackendKeepsTheLocksAlthoughRedisAndADataSourceAreConfigured() {
		assertThat(this.context.getBeansOfType(DataSource.class)).hasSize(1);
		assertThat(this.context.getBeansOfType(RedisConnectionFactory.class)).hasSize(1);
		assertThat(this.context.getBean(LockBackend.class)).isInstanceOf(InMemoryLockBackend.class);
		this.orders.fulfil(7);
		assertThat(this.recorder).ranUnder("fulfil", 7);
	}

	@Test
	void aLockedCallIsRecordedAsHeldWhileItRunsAndReleasedAfter() {
		this.orders.fulfil(42);
		assertThat(this.orders.seenInside()).singleElement().satisfies((inside) -> {
			assertThat(inside.key()).isEqualTo("holdfast:fulfil:42");
			assertThat(inside.outcome()).isEqualTo(Outcome.HELD);
			assertThat(inside.fencingToken()).isEqualTo(this.orders.tokenInside());
		});
		assertThat(this.recorder.acquisitions()).singleElement()
			.extracting(Acquisition::outcome)
			.isEqualTo(Outcome.RELEASED);
		assertThat(this.recorder).ranUnder("fulfil", 42);
	}

	@Test
	void ranUnderFailsForAnotherKeyAndNamesWhatWasRecorded() {
		this.orders.fulfil(42);
		assertThatExceptionOfType(AssertionError.class)
			.isThrownBy(() -> assertThat(this.recorder).ranUnder("fulfil", 43))
			.withMessageContaining("holdfast:fulfil:43")
			.withMessageContaining("holdfast:fulfil:42 RELEASED");
	}

	@Test
	void ranUnderFailsForAMethodWithoutALock() {
		this.orders.browse();
		assertThatExceptionOfType(AssertionError.class)
			.isThrownBy(() -> assertThat(this.recorder).ranUnder("browse"))
			.withMessageContaining("no acquisition at all");
		assertThat(this.recorder).neverLocked("browse");
	}

	@Test
	void aSkippedCallIsRecordedAsNotAcquired() throws Exception {
		try (Lease held = this.locks.acquire("report", null, LockOptions.defaults())) {
			// another thread: on this one the call would re-enter the held lock
			String result = CompletableFuture.supplyAsync(this.orders::report).get(10, TimeUnit.SECONDS);
			assertThat(result).isNull();
		}
		assertThat(this.recorder).wasNotAcquired("report", null);
		assertThatExceptionOfType(AssertionError.class)
			.isThrownBy(() -> assertThat(this.recorder).neverLocked("report"));
	}

	@SpringBootConfiguration
	@EnableAutoConfiguration
	@Import({ Orders.class, LockRecorder.class })
	static class App {

	}

	static class Orders {

		@Autowired
		private LockRecorder recorder;

		private final AtomicReference<List<Acquisition>> seenInside = new AtomicReference<>();

		private final AtomicReference<Long> tokenInside = new AtomicReference<>();

		@DistributedLock(name = "fulfil", key = "#orderId")
		public void fulfil(long orderId) {
			this.seenInside.set(this.recorder.acquisitions());
			this.tokenInside.set(LockContext.requireLease().fencingToken());
		}

		/** What the recorder listed while {@link #fulfil} ran (read through the proxy). */
		public List<Acquisition> seenInside() {
			return this.seenInside.get();
		}

		public Long tokenInside() {
			return this.tokenInside.get();
		}

		public void browse() {
		}

		@DistributedLock(name = "report", onLocked = OnLocked.SKIP)
		public String report() {
			return "report";
		}

	}

}
