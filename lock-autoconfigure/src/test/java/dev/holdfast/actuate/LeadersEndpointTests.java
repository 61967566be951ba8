package dev.holdfast.actuate;

import java.time.Duration;
import java.util.UUID;

import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.context.LifecycleAutoConfiguration;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;

import dev.holdfast.LeaderElections;
import dev.holdfast.Leadership;
import dev.holdfast.actuate.LeadersEndpoint.GroupDescriptor;
import dev.holdfast.actuate.LeadersEndpoint.LeaderInstanceStatus;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastLeaderAutoConfiguration;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The {@code leaders} endpoint of two instances (two application contexts on one memory
 * backend): it lists the groups with the term of the leader, and its yield moves the leadership
 * to the other instance within the hand-over time (LDR-5).
 */
class LeadersEndpointTests {

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, HoldfastAutoConfiguration.class,
				HoldfastLeaderAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class))
		.withBean(InMemoryLockBackend.class, () -> this.backend)
		.withPropertyValues("management.endpoints.web.exposure.include=leaders");

	private final String group = "group-" + UUID.randomUUID();

	@Test
	void listsTheGroupsAndAYieldThroughTheEndpointMovesLeadershipToTheOtherInstance() {
		this.runner.withPropertyValues("holdfast.instance-name=first")
			.run((first) -> this.runner.withPropertyValues("holdfast.instance-name=second").run((second) -> {
			Leadership one = joinAndStart(first);
			long firstToken = one.awaitLeadership(Duration.ofSeconds(5)).orElseThrow().fencingToken();
			Leadership two = joinAndStart(second);
			LeadersEndpoint endpoint = first.getBean(LeadersEndpoint.class);

			GroupDescriptor leading = endpoint.leaders().groups().get(0);
			assertThat(leading.group()).isEqualTo(this.group);
			assertThat(leading.leader()).isTrue();
			assertThat(leading.fencingToken()).isEqualTo(firstToken);
			assertThat(leading.since()).isNotNull();
			assertThat(leading.expires()).as("the lease's expiry").isAfter(leading.since());
			assertThat(leading.leaderInstance()).isEqualTo("first");
			assertThat(second.getBean(LeadersEndpoint.class).group(this.group))
				.isEqualTo(new GroupDescriptor(this.group, false, null, null, null, "first", LeaderInstanceStatus.READ));
			assertThat(endpoint.group("not-joined")).isNull();

			long start = System.nanoTime();
			assertThat(endpoint.yield(SecurityContext.NONE, this.group).getBody().yielded()).isTrue();
			await().atMost(Duration.ofSeconds(2)).until(two::isLeader);
			Duration takeover = Duration.ofNanos(System.nanoTime() - start);
			System.out.println("Takeover after a yield through the leaders endpoint: " + takeover.toMillis() + " ms");
			assertThat(takeover).isLessThan(Duration.ofMillis(1500));
			assertThat(one.isLeader()).isFalse();
			assertThat(two.term().orElseThrow().fencingToken()).isGreaterThan(firstToken);
			assertThat(endpoint.group(this.group).leaderInstance()).as("seen from the instance that yielded")
				.isEqualTo("second");
			assertThat(endpoint.yield(SecurityContext.NONE, this.group).getBody().yielded()).as("not leading any more")
				.isFalse();
			assertThat(endpoint.yield(SecurityContext.NONE, "not-joined").getStatus()).isEqualTo(404);
		}));
	}

	@Test
	void withoutLeaderElectionsThereIsNoEndpoint() {
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class,
					HoldfastActuatorAutoConfiguration.class))
			.withBean(InMemoryLockBackend.class, () -> this.backend)
			.run((context) -> assertThat(context).doesNotHaveBean(LeadersEndpoint.class));
	}

	private Leadership joinAndStart(ConfigurableApplicationContext context) {
		Leadership leadership = context.getBean(LeaderElections.class).join(this.group);
		context.publishEvent(new ApplicationReadyEvent(new SpringApplication(), new String[0], context, Duration.ZERO));
		return leadership;
	}

}
