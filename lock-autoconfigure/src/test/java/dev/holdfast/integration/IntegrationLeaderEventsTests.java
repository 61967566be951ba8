package dev.holdfast.integration;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;

import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.context.LifecycleAutoConfiguration;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.integration.leader.event.AbstractLeaderEvent;
import org.springframework.integration.leader.event.OnGrantedEvent;
import org.springframework.integration.leader.event.OnRevokedEvent;

import dev.holdfast.LeaderElections;
import dev.holdfast.Leadership;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastIntegrationLeaderAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastLeaderAutoConfiguration;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Holdfast in place of {@code LockRegistryLeaderInitiator}: an application's listeners of
 * Spring Integration's leader events, and their {@code Context.yield()}, work on two instances
 * (two contexts on one memory backend); without spring-integration-core nothing of it is there.
 */
class IntegrationLeaderEventsTests {

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, HoldfastAutoConfiguration.class,
				HoldfastLeaderAutoConfiguration.class, HoldfastIntegrationLeaderAutoConfiguration.class))
		.withBean(InMemoryLockBackend.class, () -> this.backend);

	private final String group = "group-" + UUID.randomUUID();

	@Test
	void aListenerOfOnGrantedEventYieldsThroughItsContextAndLeadershipMovesToTheOtherInstance() {
		this.runner.withBean(YieldOnFirstGrant.class).run((first) -> this.runner.run((second) -> {
			Leadership one = joinAndStart(first);
			YieldOnFirstGrant events = first.getBean(YieldOnFirstGrant.class);
			await().atMost(Duration.ofSeconds(5)).until(() -> events.events.size() >= 2);
			assertThat(events.events.get(0)).isInstanceOf(OnGrantedEvent.class);
			assertThat(events.events.get(0).getRole()).isEqualTo(this.group);
			assertThat(events.events.get(0).getContext().getRole()).isEqualTo(this.group);
			assertThat(events.events.get(1)).isInstanceOf(OnRevokedEvent.class);
			assertThat(events.events.get(1).getContext().isLeader()).isFalse();
			assertThat(one.isLeader()).isFalse();

			Leadership two = joinAndStart(second);
			assertThat(two.awaitLeadership(Duration.ofSeconds(2))).as("the other instance leads").isPresent();
			two.yield();
			assertThat(one.awaitLeadership(Duration.ofSeconds(3))).as("leadership comes back").isPresent();
			await().atMost(Duration.ofSeconds(2)).until(() -> events.events.size() == 3);
			assertThat(events.events.get(2)).isInstanceOf(OnGrantedEvent.class);
			assertThat(events.events.get(2).getContext().isLeader()).isTrue();
			events.events.get(0).getContext().yield();
			assertThat(one.isLeader()).as("the first term's context does not end a later term").isTrue();
		}));
	}

	@Test
	void withoutSpringIntegrationNothingFailsAndLeadershipStillWorks() {
		this.runner.withClassLoader(new FilteredClassLoader(OnGrantedEvent.class)).run((context) -> {
			assertThat(context).hasNotFailed().doesNotHaveBean(IntegrationLeaderEvents.class);
			assertThat(joinAndStart(context).awaitLeadership(Duration.ofSeconds(5))).isPresent();
		});
	}

	private Leadership joinAndStart(ConfigurableApplicationContext context) {
		Leadership leadership = context.getBean(LeaderElections.class).join(this.group);
		context.publishEvent(new ApplicationReadyEvent(new SpringApplication(), new String[0], context, Duration.ZERO));
		return leadership;
	}

	/** What an application written for LockRegistryLeaderInitiator does: yields on the first grant. */
	static class YieldOnFirstGrant implements ApplicationListener<AbstractLeaderEvent> {

		final List<AbstractLeaderEvent> events = new CopyOnWriteArrayList<>();

		private final AtomicBoolean yielded = new AtomicBoolean();

		@Override
		public void onApplicationEvent(AbstractLeaderEvent event) {
			this.events.add(event);
			if (event instanceof OnGrantedEvent && this.yielded.compareAndSet(false, true)) {
				event.getContext().yield();
			}
		}

	}

}
