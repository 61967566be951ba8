package dev.holdfast.actuate;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.test.simple.SimpleSpan;
import io.micrometer.tracing.test.simple.SimpleTracer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import reactor.core.Disposable;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.data.redis.autoconfigure.DataRedisAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.DistributedLock;
import dev.holdfast.Lease;
import dev.holdfast.LockBackendException;
import dev.holdfast.LockMode;
import dev.holdfast.LockOptions;
import dev.holdfast.OnLocked;
import dev.holdfast.SingleInstanceScheduled;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

/**
 * Observations of {@code @DistributedLock} methods as a tracing system sees them: a real context
 * with Boot's observation and metrics auto-configuration, and micrometer-tracing's
 * {@link SimpleTracer} behind the observation registry.
 */
class LockObservationTests {

	private static final String ACQUIRE_SPAN = "lock acquire orders";

	private static final String HELD_SPAN = "lock held orders";

	private final SimpleTracer tracer = new SimpleTracer();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(ObservationAutoConfiguration.class, MetricsAutoConfiguration.class,
				HoldfastAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class))
		.withBean(MeterRegistry.class, SimpleMeterRegistry::new)
		.withBean(DefaultTracingObservationHandler.class, () -> new DefaultTracingObservationHandler(this.tracer))
		.withBean(Orders.class)
		.withPropertyValues("holdfast.backend=memory");

	private final String id = "customer-" + UUID.randomUUID();

	@Test
	void scheduledRunIsObservedLikeAnAnnotatedMethod() {
		this.runner.withBean(Nightly.class).run((context) -> {
			await().atMost(Duration.ofSeconds(10))
				.until(() -> !spans("lock held nightly").isEmpty() && ended(spans("lock held nightly").get(0)));
			SimpleSpan acquire = spans("lock acquire nightly").get(0);
			SimpleSpan held = spans("lock held nightly").get(0);
			SimpleSpan query = spans("report.query").get(0);
			assertThat(acquire.getTags()).containsEntry("outcome", "acquired").containsKey("fencing.token");
			assertThat(held.getTags()).containsEntry("outcome", "released")
				.containsEntry("fencing.token", acquire.getTags().get("fencing.token"));
			assertThat(query.getParentId()).as("the job's observation's parent").isEqualTo(held.getSpanId());
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			assertThat(meters.get(LockMetricsListener.HELD)
				.tags("name", "nightly", "backend", "memory", "outcome", "released")
				.timer()
				.count()).isPositive();
		});
	}

	@Test
	void annotatedMethodIsAnAcquireSpanAndAHeldSpanThatParentsWhatTheMethodObserves() {
		this.runner.run((context) -> {
			Orders orders = context.getBean(Orders.class);
			ObservationRegistry registry = context.getBean(ObservationRegistry.class);
			Observation request = Observation.createNotStarted("request", registry).start();
			try (Observation.Scope scope = request.openScope()) {
				assertThat(orders.reserve(this.id)).isEqualTo(this.id);
			}
			request.stop();
			SimpleSpan requestSpan = span("request");
			SimpleSpan acquire = span(ACQUIRE_SPAN);
			SimpleSpan held = span(HELD_SPAN);
			SimpleSpan query = span("inventory.query");
			assertThat(acquire.getParentId()).as("acquire's parent").isEqualTo(requestSpan.getSpanId());
			assertThat(held.getParentId()).as("held's parent").isEqualTo(requestSpan.getSpanId());
			assertThat(query.getParentId()).as("the method's observation's parent").isEqualTo(held.getSpanId());
			assertThat(acquire.getTags()).containsEntry("name", "orders")
				.containsEntry("backend", "memory")
				.containsEntry("outcome", "acquired")
				.containsKey("fencing.token");
			assertThat(held.getTags()).containsEntry("name", "orders")
				.containsEntry("backend", "memory")
				.containsEntry("outcome", "released")
				.containsEntry("fencing.token", acquire.getTags().get("fencing.token"));
			assertThat(ended(held)).isTrue();
			assertThat(held.getEndTimestamp()).isAfterOrEqualTo(query.getEndTimestamp());
			assertThat(this.tracer.getSpans()).allSatisfy((span) -> assertThat(span.getTags().values())
				.noneSatisfy((value) -> assertThat(value).contains(this.id)));
			assertThat(registry.getCurrentObservation()).as("no scope left open").isNull();
		});
	}

	@Test
	void reentrantHoldKeepsTheCurrentObservation() {
		this.runner.run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			ObservationRegistry registry = context.getBean(ObservationRegistry.class);
			template.executeLocked("orders", this.id, LockOptions.defaults(),
					() -> Observation.createNotStarted("step", registry).observe(() -> template
						.executeLocked("orders", this.id, LockOptions.defaults(), () -> {
							Observation.createNotStarted("inventory.query", registry).observe(() -> {
							});
							return null;
						})));
			assertThat(spans(ACQUIRE_SPAN)).as("reentrant acquisitions are not observed").hasSize(1);
			assertThat(span("step").getParentId()).isEqualTo(span(HELD_SPAN).getSpanId());
			assertThat(span("inventory.query").getParentId()).isEqualTo(span("step").getSpanId());
		});
	}

	@Test
	void observationsProduceTheAcquireAndHeldTimersOnce() {
		this.runner.run((context) -> {
			context.getBean(Orders.class).reserve(this.id);
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			assertThat(context.getBean(LockMetricsListener.class).recordsTimers()).isFalse();
			assertThat(meters.get(LockMetricsListener.ACQUIRE)
				.tags("name", "orders", "backend", "memory", "outcome", "acquired", "error", "none")
				.timer()
				.count()).isEqualTo(1);
			assertThat(meters.get(LockMetricsListener.HELD)
				.tags("name", "orders", "backend", "memory", "outcome", "released")
				.timer()
				.count()).isEqualTo(1);
			assertThat(meters.find(LockMetricsListener.ACQUIRE).timers()).hasSize(1);
			assertThat(meters.find(LockMetricsListener.HELD).timers()).hasSize(1);
		});
	}

	@Test
	void aPermitIsObservedWithModePermitAndALockWithModeExclusive() {
		this.runner.run((context) -> {
			context.getBean(Orders.class).reserve(this.id);
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			template.executeWithPermit("exports", "eu", 2, LockOptions.defaults(), () -> "exported");
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			for (String timer : List.of(LockMetricsListener.ACQUIRE, LockMetricsListener.HELD)) {
				assertThat(meters.get(timer).tags("name", "exports", "mode", "permit").timer().count()).as(timer)
					.isEqualTo(1);
				assertThat(meters.get(timer).tags("name", "orders", "mode", "exclusive").timer().count()).as(timer)
					.isEqualTo(1);
			}
			assertThat(spans("lock held exports")).singleElement()
				.satisfies((span) -> assertThat(span.getTags()).containsEntry("mode", "permit"));
		});
	}

	@Test
	void aReadHoldIsObservedWithModeRead() {
		this.runner.run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			template.executeLocked("catalog", "eu", LockOptions.defaults().mode(LockMode.READ), () -> "read");
			MeterRegistry meters = context.getBean(MeterRegistry.class);
			for (String timer : List.of(LockMetricsListener.ACQUIRE, LockMetricsListener.HELD)) {
				assertThat(meters.get(timer).tags("name", "catalog", "mode", "read").timer().count()).as(timer)
					.isEqualTo(1);
			}
			assertThat(spans("lock held catalog")).singleElement()
				.satisfies((span) -> assertThat(span.getTags()).containsEntry("mode", "read"));
		});
	}

	@Test
	void observationsCanBeTurnedOffWithBootsProperty() {
		this.runner.withPropertyValues("management.observations.enable.holdfast=false").run((context) -> {
			assertThat(context.getBean(Orders.class).reserve(this.id)).isEqualTo(this.id);
			assertThat(this.tracer.getSpans()).extracting(SimpleSpan::getName).containsExactly("inventory.query");
			assertThat(context.getBean(MeterRegistry.class).find(LockMetricsListener.ACQUIRE).meters()).isEmpty();
		});
	}

	@Test
	void lockHeldElsewhereIsANotAcquiredSpan() {
		this.runner.run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			try (Lease other = CompletableFuture
				.supplyAsync(() -> template.acquire("orders", this.id, LockOptions.defaults()))
				.get(5, TimeUnit.SECONDS)) {
				this.tracer.getSpans().clear();
				assertThat(context.getBean(Orders.class).tryReserve(this.id)).isNull();
			}
			assertThat(span(ACQUIRE_SPAN).getTags()).containsEntry("outcome", "not_acquired")
				.doesNotContainKey("fencing.token");
			assertThat(spans(HELD_SPAN)).isEmpty();
		});
	}

	@Test
	void waitingSubscriptionCancelledIsACancelledSpan() {
		this.runner.withPropertyValues("holdfast.wait-time=30s").run((context) -> {
			DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
			try (Lease other = CompletableFuture
				.supplyAsync(() -> template.acquire("orders", this.id, LockOptions.defaults()))
				.get(5, TimeUnit.SECONDS)) {
				this.tracer.getSpans().clear();
				Disposable waiting = context.getBean(Orders.class).reactive(this.id, Mono.just("never")).subscribe();
				waiting.dispose();
				await().atMost(Duration.ofSeconds(5)).until(() -> !spans(ACQUIRE_SPAN).isEmpty());
			}
			assertThat(span(ACQUIRE_SPAN).getTags()).containsEntry("outcome", "cancelled");
			assertThat(span(ACQUIRE_SPAN).getError()).isNull();
			assertThat(spans(HELD_SPAN)).isEmpty();
		});
	}

	@Test
	void backendFailureIsAFailedSpanWithTheError() {
		try (RedisServer redis = RedisServer.start()) {
			withRedis(redis).run((context) -> {
				redis.pause();
				try {
					assertThatExceptionOfType(LockBackendException.class)
						.isThrownBy(() -> context.getBean(Orders.class).reserve(this.id));
				}
				finally {
					redis.resume();
				}
				SimpleSpan acquire = span(ACQUIRE_SPAN);
				assertThat(acquire.getTags()).containsEntry("outcome", "failed").containsEntry("backend", "redis");
				assertThat(acquire.getError()).isInstanceOf(LockBackendException.class);
				assertThat(spans(HELD_SPAN)).isEmpty();
			});
		}
	}

	@Test
	void leaseLostWhileHeldEndsTheHeldSpanAsLost() {
		try (RedisServer redis = RedisServer.start()) {
			withRedis(redis).withPropertyValues("holdfast.lease-time=1s").run((context) -> {
				DefaultLockTemplate template = context.getBean(DefaultLockTemplate.class);
				try (Lease lease = template.acquire("orders", this.id, LockOptions.defaults())) {
					redis.pause();
					try {
						// Renewals time out until the lease expires: it is lost while still held.
						await().atMost(Duration.ofSeconds(10)).until(() -> !spans(HELD_SPAN).isEmpty());
					}
					finally {
						redis.resume();
					}
					assertThat(lease.isValid()).isFalse();
				}
				assertThat(span(HELD_SPAN).getTags()).containsEntry("outcome", "lost");
				assertThat(ended(span(HELD_SPAN))).isTrue();
			});
		}
	}

	@Test
	void futureHeldSpanEndsWhenTheFutureCompletesNotWhenTheMethodReturns() {
		this.runner.run((context) -> {
			CompletableFuture<String> work = new CompletableFuture<>();
			CompletableFuture<String> result = context.getBean(Orders.class).later(this.id, work);
			// Spans get their name when they end: the open one is found as the query's parent.
			SimpleSpan held = parentOf(span("inventory.query"));
			assertThat(ended(held)).as("ended when the method returned").isFalse();
			assertThat(spans(HELD_SPAN)).isEmpty();
			assertThat(context.getBean(ObservationRegistry.class).getCurrentObservation()).isNull();
			work.complete("done");
			assertThat(result.get(5, TimeUnit.SECONDS)).isEqualTo("done");
			assertThat(span(HELD_SPAN)).isSameAs(held);
			assertThat(ended(held)).isTrue();
			assertThat(held.getTags()).containsEntry("outcome", "released");
		});
	}

	@ParameterizedTest
	@ValueSource(strings = { "memory", "jdbc" })
	void monoHeldSpanEndsAtCompletionAndParentsWhatThePublisherObserves(String backend) {
		// memory acquires without blocking; jdbc (H2) on boundedElastic
		ApplicationContextRunner runner = backend.equals("jdbc")
				? this.runner.withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class))
					.withPropertyValues("holdfast.backend=jdbc",
							"spring.datasource.url=jdbc:h2:mem:" + UUID.randomUUID())
				: this.runner;
		runner.run((context) -> {
			ObservationRegistry registry = context.getBean(ObservationRegistry.class);
			Sinks.One<String> work = Sinks.one();
			Observation request = Observation.createNotStarted("request", registry).start();
			CompletableFuture<String> result = context.getBean(Orders.class)
				.reactive(this.id, work.asMono())
				.contextWrite((reactor) -> reactor.put("micrometer.observation", request))
				.toFuture();
			await().atMost(Duration.ofSeconds(5)).until(() -> !spans("inventory.query").isEmpty());
			SimpleSpan held = parentOf(span("inventory.query"));
			assertThat(ended(held)).as("ended before the Mono completed").isFalse();
			work.tryEmitValue("done");
			assertThat(result.get(5, TimeUnit.SECONDS)).isEqualTo("done");
			await().atMost(Duration.ofSeconds(5)).until(() -> ended(held));
			request.stop();
			assertThat(span(HELD_SPAN)).isSameAs(held);
			String requestId = span("request").getSpanId();
			assertThat(span(ACQUIRE_SPAN).getParentId()).isEqualTo(requestId);
			assertThat(held.getParentId()).isEqualTo(requestId);
			assertThat(held.getTags()).containsEntry("outcome", "released").containsEntry("backend", backend);
		});
	}

	private ApplicationContextRunner withRedis(RedisServer redis) {
		return this.runner.withConfiguration(AutoConfigurations.of(DataRedisAutoConfiguration.class))
			.withPropertyValues("holdfast.backend=redis", "spring.data.redis.port=" + redis.port(),
					"spring.data.redis.timeout=1s");
	}

	private List<SimpleSpan> spans(String name) {
		return this.tracer.getSpans().stream().filter(named(name)).toList();
	}

	private SimpleSpan span(String name) {
		List<SimpleSpan> spans = spans(name);
		assertThat(spans).as("spans named '" + name + "' in " + this.tracer.getSpans()).hasSize(1);
		return spans.get(0);
	}

	private SimpleSpan parentOf(SimpleSpan child) {
		return this.tracer.getSpans()
			.stream()
			.filter((span) -> span.getSpanId().equals(child.getParentId()))
			.findFirst()
			.orElseThrow();
	}

	private static Predicate<SimpleSpan> named(String name) {
		return (span) -> name.equals(span.getName());
	}

	private static boolean ended(SimpleSpan span) {
		return !span.getEndTimestamp().equals(Instant.EPOCH);
	}

	/** Locked methods that observe their own work, as JDBC or HTTP instrumentation would. */
	static class Nightly {

		private final ObservationRegistry registry;

		Nightly(ObservationRegistry registry) {
			this.registry = registry;
		}

		@SingleInstanceScheduled(name = "nightly", fixedDelay = "10m")
		void report() {
			Observation.createNotStarted("report.query", this.registry).observe(() -> {
			});
		}

	}

	static class Orders {

		private final ObservationRegistry registry;

		Orders(ObservationRegistry registry) {
			this.registry = registry;
		}

		@DistributedLock(name = "orders", key = "#id")
		String reserve(String id) {
			query();
			return id;
		}

		@DistributedLock(name = "orders", key = "#id", onLocked = OnLocked.SKIP)
		String tryReserve(String id) {
			query();
			return id;
		}

		@DistributedLock(name = "orders", key = "#id")
		CompletableFuture<String> later(String id, CompletableFuture<String> work) {
			query();
			return work;
		}

		@DistributedLock(name = "orders", key = "#id")
		Mono<String> reactive(String id, Mono<String> work) {
			return Mono.deferContextual((reactor) -> {
				Observation.createNotStarted("inventory.query", this.registry)
					.parentObservation(reactor.getOrDefault("micrometer.observation", null))
					.observe(() -> {
					});
				return work;
			});
		}

		private void query() {
			Observation.createNotStarted("inventory.query", this.registry).observe(() -> {
			});
		}

	}

}
