package dev.holdfast.actuate;

import java.time.Duration;
import java.util.UUID;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
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
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastLeaderAutoConfiguration;
import dev.holdfast.test.server.ZooKeeperServer;
import dev.holdfast.zookeeper.ZooKeeperClients;
import dev.holdfast.zookeeper.ZooKeeperLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The {@code leaders} endpoint on a real ZooKeeper, two instances each on a session of its own:
 * both name the instance that leads, read from the lock node's data, before and after a yield.
 */
class ZooKeeperLeadersEndpointTests {

	private static ZooKeeperServer server;

	private final String group = "group-" + UUID.randomUUID();

	@BeforeAll
	static void startServer() {
		server = ZooKeeperServer.start();
	}

	@AfterAll
	static void stopServer() {
		server.close();
	}

	private ApplicationContextRunner instance(String name) {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, HoldfastAutoConfiguration.class,
					HoldfastLeaderAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class))
			.withBean(ZooKeeperLockBackend.class, () -> ZooKeeperClients.backend(server.connectString()))
			.withPropertyValues("holdfast.instance-name=" + name, "management.endpoints.web.exposure.include=leaders");
	}

	@Test
	void bothInstancesNameTheLeaderBeforeAndAfterAYield() {
		instance("zk-one").run((first) -> instance("zk-two").run((second) -> {
			Leadership one = joinAndStart(first);
			one.awaitLeadership(Duration.ofSeconds(10)).orElseThrow();
			Leadership two = joinAndStart(second);
			LeadersEndpoint firstView = first.getBean(LeadersEndpoint.class);
			LeadersEndpoint secondView = second.getBean(LeadersEndpoint.class);
			assertThat(firstView.leaders().groups()).singleElement()
				.satisfies((group) -> assertThat(group.leaderInstance()).isEqualTo("zk-one"));
			assertThat(secondView.group(this.group).leader()).isFalse();
			assertThat(secondView.group(this.group).leaderInstance()).isEqualTo("zk-one");

			assertThat(firstView.yield(SecurityContext.NONE, this.group).yielded()).isTrue();
			await().atMost(Duration.ofSeconds(5)).until(two::isLeader);
			assertThat(firstView.group(this.group).leaderInstance()).isEqualTo("zk-two");
			assertThat(secondView.group(this.group).leaderInstance()).isEqualTo("zk-two");
		}));
	}

	private Leadership joinAndStart(ConfigurableApplicationContext context) {
		Leadership leadership = context.getBean(LeaderElections.class).join(this.group);
		context.publishEvent(new ApplicationReadyEvent(new SpringApplication(), new String[0], context, Duration.ZERO));
		return leadership;
	}

}
