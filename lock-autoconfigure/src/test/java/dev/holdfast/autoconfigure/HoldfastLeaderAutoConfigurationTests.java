package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.context.LifecycleAutoConfiguration;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;

import dev.holdfast.LeaderElections;
import dev.holdfast.Leadership;
import dev.holdfast.LeadershipEvent;
import dev.holdfast.LeadershipGrantedEvent;
import dev.holdfast.LeadershipRevokedEvent;
import dev.holdfast.LockOptions;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class HoldfastLeaderAutoConfigurationTests {

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, HoldfastAutoConfiguration.class,
				HoldfastLeaderAutoConfiguration.class))
		.withBean(InMemoryLockBackend.class, () -> this.backend)
		.withBean(RecordedEvents.class);

	private final String group = "group-" + UUID.randomUUID();

	@Test
	void groupsCampaignOnceTheApplicationIsReadyAndTheirEventsAreApplicationEvents() throws Exception {
		this.runner.run((context) -> {
			Leadership leadership = context.getBean(LeaderElections.class).join(this.group);
			assertThat(leadership.awaitLeadership(Duration.ofMillis(300))).as("before the application is ready")
				.isEmpty();
			ready(context);
			long token = leadership.awaitLeadership(Duration.ofSeconds(5)).orElseThrow().fencingToken();
			List<LeadershipEvent> events = context.getBean(RecordedEvents.class).events;
			await().atMost(Duration.ofSeconds(2)).until(() -> !events.isEmpty());
			assertThat(events).singleElement()
				.isInstanceOfSatisfying(LeadershipGrantedEvent.class,
						(granted) -> assertThat(granted.getTerm().fencingToken()).isEqualTo(token));
		});
	}

	@Test
	void stoppingTheContextRevokesEveryTermAndReleasesItsLeaseBeforeTheEngineStops() throws Exception {
		this.runner.run((context) -> {
			Leadership leadership = context.getBean(LeaderElections.class).join(this.group);
			ready(context);
			assertThat(leadership.awaitLeadership(Duration.ofSeconds(5))).isPresent();
			List<LeadershipEvent> events = context.getBean(RecordedEvents.class).events;
			context.stop();
			assertThat(leadership.isLeader()).isFalse();
			assertThat(events).last()
				.isInstanceOfSatisfying(LeadershipRevokedEvent.class,
						(revoked) -> assertThat(revoked.getReason()).isEqualTo(LeadershipRevokedEvent.Reason.SHUTDOWN));
			try (DefaultLockTemplate other = new DefaultLockTemplate(this.backend, LockSettings.defaults())) {
				assertThat(other.tryAcquire("leader", this.group, LockOptions.defaults())).as("the group's lease")
					.isPresent();
			}
		});
	}

	@Test
	void anApplicationsLeaderElectionsBeanWins() {
		// The application's own bean: only its identity is compared, it is never joined.
		LeaderElections own = (group) -> {
			throw new UnsupportedOperationException("joined " + group + ": the test only compares the bean");
		};
		this.runner.withBean(LeaderElections.class, () -> own)
			.run((context) -> assertThat(context.getBean(LeaderElections.class)).isSameAs(own));
	}

	@Test
	void theIsLeaderGaugeOfAGroupIsOneWhileThisInstanceLeadsIt() {
		this.runner.withConfiguration(AutoConfigurations.of(HoldfastActuatorAutoConfiguration.class))
			.withBean(SimpleMeterRegistry.class)
			.run((context) -> {
				Leadership leadership = context.getBean(LeaderElections.class).join(this.group);
				Gauge gauge = context.getBean(MeterRegistry.class)
					.get("holdfast.leader.is_leader")
					.tag("group", this.group)
					.tag("backend", "memory")
					.gauge();
				assertThat(gauge.value()).isZero();
				ready(context);
				assertThat(leadership.awaitLeadership(Duration.ofSeconds(5))).isPresent();
				assertThat(gauge.value()).isOne();
				leadership.yield();
				assertThat(gauge.value()).isZero();
			});
	}

	private static void ready(ConfigurableApplicationContext context) {
		context.publishEvent(new ApplicationReadyEvent(new SpringApplication(), new String[0], context, Duration.ZERO));
	}

	static class RecordedEvents implements ApplicationListener<LeadershipEvent> {

		final List<LeadershipEvent> events = new CopyOnWriteArrayList<>();

		@Override
		public void onApplicationEvent(LeadershipEvent event) {
			this.events.add(event);
		}

	}

}
