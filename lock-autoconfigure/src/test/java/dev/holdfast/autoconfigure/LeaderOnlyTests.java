package dev.holdfast.autoconfigure;

import java.time.Duration;
import java.util.Optional;

import org.junit.jupiter.api.Test;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.context.LifecycleAutoConfiguration;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.SmartLifecycle;

import dev.holdfast.LeaderContext;
import dev.holdfast.LeaderElections;
import dev.holdfast.LeaderOnly;
import dev.holdfast.Leadership;
import dev.holdfast.Lease;
import dev.holdfast.LockOptions;
import dev.holdfast.NotLeaderException;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.awaitility.Awaitility.await;

class LeaderOnlyTests {

	private final InMemoryLockBackend backend = new InMemoryLockBackend();

	private final ApplicationContextRunner runner = new ApplicationContextRunner()
		.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, HoldfastAutoConfiguration.class,
				HoldfastLeaderAutoConfiguration.class))
		.withBean(InMemoryLockBackend.class, () -> this.backend);

	@Test
	void methodRunsOnlyWhileLeadingWithItsTermAndIsSkippedOrThrowsOtherwise() {
		this.runner.withBean(Poller.class).run((context) -> {
			Poller poller = context.getBean(Poller.class);
			assertThat(poller.poll()).as("before the application is ready").isNull();
			assertThat(poller.pollOptional()).isEmpty();
			assertThatExceptionOfType(NotLeaderException.class).isThrownBy(poller::mustLead)
				.withMessageContaining("'poller'");
			ready(context);
			await().atMost(Duration.ofSeconds(5)).until(() -> poller.poll() != null);
			long token = context.getBean(LeaderElections.class).join("poller").term().orElseThrow().fencingToken();
			assertThat(poller.poll()).isEqualTo(token);
			assertThat(poller.mustLead()).isEqualTo(token);
			assertThat(LeaderContext.currentTerm()).as("outside the method").isEmpty();
			context.stop();
			assertThat(poller.poll()).as("after the context stopped").isNull();
		});
	}

	@Test
	void groupsNamedByLeaderOnlyMethodsCampaignOnceReadyWithoutACall() {
		this.runner.withBean(Poller.class).run((context) -> {
			ready(context);
			try (DefaultLockTemplate other = new DefaultLockTemplate(this.backend, LockSettings.defaults())) {
				await().atMost(Duration.ofSeconds(5))
					.until(() -> other.tryAcquire("leader", "poller", LockOptions.defaults()).map((lease) -> {
						lease.close();
						return false;
					}).orElse(true));
			}
		});
	}

	@Test
	void skipOnAPrimitiveResultFailsTheContextNamingTheMethod() {
		this.runner.withBean(Counting.class).run((context) -> assertThat(context).hasFailed()
			.getFailure()
			.rootCause()
			.hasMessageContaining("Counting.count")
			.hasMessageContaining("no empty value"));
	}

	@Test
	void aLeaderOnlyLifecycleBeanStartsOnTheGrantAndStopsOnTheRevocationNotWithTheContext() {
		this.runner.withBean(Relay.class).run((context) -> {
			Relay relay = context.getBean(Relay.class);
			assertThat(relay.isRunning()).as("started with the context").isFalse();
			ready(context);
			await().atMost(Duration.ofSeconds(5)).until(relay::isRunning);
			context.getBean(LeaderElections.class).join("relay").yield();
			await().atMost(Duration.ofSeconds(1)).until(() -> !relay.isRunning());
			await("granted again").atMost(Duration.ofSeconds(5)).until(relay::isRunning);
			context.stop();
			try (DefaultLockTemplate other = new DefaultLockTemplate(this.backend, LockSettings.defaults())) {
				assertThat(other.tryAcquire("leader", "relay", LockOptions.defaults()))
					.as("the term's lease released by the context's stop, after the bean stopped")
					.hasValueSatisfying(Lease::close);
			}
		});
	}

	@Test
	void aContextStartDoesNotStartALeaderOnlyBeanOnAFollower() {
		this.runner.withBean(Relay.class).run((context) -> {
			try (DefaultLockTemplate other = new DefaultLockTemplate(this.backend, LockSettings.defaults());
					Lease held = other.tryAcquire("leader", "relay", LockOptions.defaults()).orElseThrow()) {
				Relay relay = context.getBean(Relay.class);
				ready(context);
				context.stop();
				context.start();
				assertThat(relay.isRunning()).as("started by the context on a follower").isFalse();
			}
		});
	}

	@Test
	void aRoleBeanThatDoesNotStopKeepsTheLeaseUntilItExpires() {
		this.runner.withBean(StuckRelay.class).run((context) -> {
			StuckRelay relay = context.getBean(StuckRelay.class);
			ready(context);
			await().atMost(Duration.ofSeconds(5)).until(relay::isRunning);
			Leadership leadership = context.getBean(LeaderElections.class).join("stuck");
			leadership.yield();
			assertThat(leadership.isLeader()).isFalse();
			try (DefaultLockTemplate other = new DefaultLockTemplate(this.backend, LockSettings.defaults())) {
				// the lease of a term whose bean did not stop is not released
				await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(3)).pollInterval(Duration.ofMillis(20))
					.until(() -> {
						Optional<Lease> taken = other.tryAcquire("leader", "stuck", LockOptions.defaults());
						taken.ifPresent(Lease::close);
						return taken.isEmpty();
					});
			}
			assertThat(relay.isRunning()).as("the bean that did not stop").isTrue();
		});
	}

	@Test
	void leaderOnlyOnAClassThatIsNoSmartLifecycleFailsTheContext() {
		this.runner.withBean(NotALifecycle.class).run((context) -> assertThat(context).hasFailed()
			.getFailure()
			.rootCause()
			.hasMessageContaining("NotALifecycle")
			.hasMessageContaining("SmartLifecycle"));
	}

	private static void ready(ConfigurableApplicationContext context) {
		context.publishEvent(new ApplicationReadyEvent(new SpringApplication(), new String[0], context, Duration.ZERO));
	}

	static class Poller {

		@LeaderOnly("poller")
		public Long poll() {
			return LeaderContext.requireTerm().fencingToken();
		}

		@LeaderOnly("poller")
		public Optional<Long> pollOptional() {
			return Optional.of(LeaderContext.requireTerm().fencingToken());
		}

		@LeaderOnly(group = "poller", onNotLeader = LeaderOnly.OnNotLeader.THROW)
		public long mustLead() {
			return LeaderContext.requireTerm().fencingToken();
		}

	}

	@LeaderOnly("relay")
	static class Relay implements SmartLifecycle {

		private volatile boolean running;

		@Override
		public void start() {
			this.running = true;
		}

		@Override
		public void stop() {
			this.running = false;
		}

		@Override
		public boolean isRunning() {
			return this.running;
		}

	}

	/** A bean whose stop() fails: it keeps running. */
	@LeaderOnly("stuck")
	static class StuckRelay implements SmartLifecycle {

		private volatile boolean running;

		@Override
		public void start() {
			this.running = true;
		}

		@Override
		public void stop() {
			throw new IllegalStateException("cannot stop");
		}

		@Override
		public boolean isRunning() {
			return this.running;
		}

	}

	@LeaderOnly("nothing")
	static class NotALifecycle {

	}

	static class Counting {

		@LeaderOnly("counter")
		public int count() {
			return 1;
		}

	}

}
