package dev.holdfast.actuate;

import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.Status;

import dev.holdfast.LockBackendException;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.leader.DefaultLeaderElections;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.AcquireResult;
import dev.holdfast.spi.BackendHealth;
import dev.holdfast.spi.LockBackend;

import static org.assertj.core.api.Assertions.assertThat;

class LockBackendHealthIndicatorTests {

	@Test
	void backendBelowQuorumIsDownWithItsDetails() {
		Health health = healthOf(
				new CheckingBackend(() -> BackendHealth.Check.down(Map.of("reachable", 1, "quorum", 2))));
		assertThat(health.getStatus()).isEqualTo(Status.DOWN);
		assertThat(health.getDetails()).containsEntry("backend", "test")
			.containsEntry("reachable", 1)
			.containsEntry("quorum", 2);
	}

	@Test
	void unreachableBackendIsDownWithTheError() {
		Health health = healthOf(new CheckingBackend(() -> {
			throw new LockBackendException("connection refused", null);
		}));
		assertThat(health.getStatus()).isEqualTo(Status.DOWN);
		assertThat(health.getDetails()).containsEntry("backend", "test");
		assertThat(String.valueOf(health.getDetails().get("error"))).contains("connection refused");
	}

	@Test
	void backendThatCannotCheckItselfIsUnknown() {
		Health health = healthOf(new PlainBackend());
		assertThat(health.getStatus()).isEqualTo(Status.UNKNOWN);
		assertThat(health.getDetails()).containsEntry("backend", "plain");
	}

	@Test
	void leaderGroupsAreListedAndBeingAFollowerIsNotDown() throws Exception {
		InMemoryLockBackend backend = new InMemoryLockBackend();
		try (DefaultLockTemplate first = new DefaultLockTemplate(backend, LockSettings.defaults());
				DefaultLockTemplate second = new DefaultLockTemplate(backend, LockSettings.defaults());
				DefaultLeaderElections leading = new DefaultLeaderElections(first, Duration.ofSeconds(30), (e) -> {
				});
				DefaultLeaderElections following = new DefaultLeaderElections(second, Duration.ofSeconds(30), (e) -> {
				})) {
			leading.start();
			assertThat(leading.join("relay").awaitLeadership(Duration.ofSeconds(5))).isPresent();
			following.start();
			following.join("relay");
			Health leader = new LockBackendHealthIndicator(first, null, leading).health(true);
			Health follower = new LockBackendHealthIndicator(second, null, following).health(true);
			assertThat(leader.getDetails()).containsEntry("leaderGroups", Map.of("relay", "leader"));
			assertThat(follower.getDetails()).containsEntry("leaderGroups", Map.of("relay", "follower"));
			assertThat(follower.getStatus()).isEqualTo(Status.UP);
		}
	}

	private static Health healthOf(LockBackend backend) {
		return new LockBackendHealthIndicator(new DefaultLockTemplate(backend, LockSettings.defaults())).health(true);
	}

	private static class PlainBackend implements LockBackend {

		@Override
		public String name() {
			return "plain";
		}

		@Override
		public AcquireResult tryAcquire(String key, String owner, Duration ttl) {
			return AcquireResult.acquired(1);
		}

		@Override
		public boolean release(String key, String owner) {
			return true;
		}

	}

	private static final class CheckingBackend extends PlainBackend implements BackendHealth {

		private final java.util.function.Supplier<Check> check;

		CheckingBackend(java.util.function.Supplier<Check> check) {
			this.check = check;
		}

		@Override
		public String name() {
			return "test";
		}

		@Override
		public Check checkHealth() {
			return this.check.get();
		}

	}

}
