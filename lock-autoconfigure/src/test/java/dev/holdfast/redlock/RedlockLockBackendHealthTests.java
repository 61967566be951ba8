package dev.holdfast.redlock;

import java.time.Duration;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.test.server.RedisServer;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The {@code holdfast} health indicator on three real Redlock nodes: UP with all of them, still
 * UP with one killed (the quorum of 2 answers), DOWN below the quorum.
 */
class RedlockLockBackendHealthTests {

	private RedisServer first;

	private RedisServer second;

	private RedisServer third;

	@BeforeEach
	void start() {
		this.first = RedisServer.start();
		this.second = RedisServer.start();
		this.third = RedisServer.start();
	}

	@AfterEach
	void stop() {
		this.first.close();
		this.second.close();
		this.third.close();
	}

	@Test
	void healthIsDownBelowQuorumWithReachableNodesAndQuorum() {
		new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(HoldfastAutoConfiguration.class,
					HoldfastActuatorAutoConfiguration.class))
			.withPropertyValues("holdfast.redlock.nodes=" + this.first.uri() + "," + this.second.uri() + ","
					+ this.third.uri(), "holdfast.redlock.node-timeout=500ms")
			.run((context) -> {
				HealthIndicator indicator = context.getBean("holdfastHealthIndicator", HealthIndicator.class);
				Health all = indicator.health(true);
				assertThat(all.getStatus()).isEqualTo(Status.UP);
				assertThat(all.getDetails()).containsEntry("backend", "redlock")
					.containsEntry("nodes", 3)
					.containsEntry("reachable", 3)
					.containsEntry("quorum", 2);

				this.third.kill();
				Health quorum = indicator.health(true);
				assertThat(quorum.getStatus()).isEqualTo(Status.UP);
				assertThat(quorum.getDetails()).containsEntry("reachable", 2);

				this.second.kill();
				long start = System.nanoTime();
				Health below = indicator.health(true);
				assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(3));
				assertThat(below.getStatus()).isEqualTo(Status.DOWN);
				assertThat(below.getDetails()).containsEntry("reachable", 1).containsEntry("quorum", 2);
				assertThat(below.getDetails().toString()).doesNotContain(this.first.uri());
			});
	}

}
