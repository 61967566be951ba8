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
import dev.holdfast.actuate.LeadersEndpoint.GroupDescriptor;
import dev.holdfast.actuate.LeadersEndpoint.LeaderInstanceStatus;
import dev.holdfast.autoconfigure.HoldfastActuatorAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastAutoConfiguration;
import dev.holdfast.autoconfigure.HoldfastLeaderAutoConfiguration;
import dev.holdfast.test.server.BlackholeProxy;
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
		return instance(name, server.connectString());
	}

	private ApplicationContextRunner instance(String name, String connectString) {
		return new ApplicationContextRunner()
			.withConfiguration(AutoConfigurations.of(LifecycleAutoConfiguration.class, HoldfastAutoConfiguration.class,
					HoldfastLeaderAutoConfiguration.class, HoldfastActuatorAutoConfiguration.class))
			.withBean(ZooKeeperLockBackend.class, () -> ZooKeeperClients.backend(connectString))
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
				.satisfies((group) -> assertThat(group.leaderInstance()).isEqualTo("zk-one"))
				.satisfies((group) -> assertThat(group.leaderInstanceStatus()).isEqualTo(LeaderInstanceStatus.THIS_INSTANCE));
			assertThat(secondView.group(this.group).leader()).isFalse();
			assertThat(secondView.group(this.group).leaderInstance()).isEqualTo("zk-one");

			assertThat(firstView.yield(SecurityContext.NONE, this.group).getBody().yielded()).isTrue();
			await().atMost(Duration.ofSeconds(5)).until(two::isLeader);
			assertThat(firstView.group(this.group).leaderInstance()).isEqualTo("zk-two");
			assertThat(secondView.group(this.group).leaderInstance()).isEqualTo("zk-two");
		}));
	}

	/**
	 * A follower whose server stops answering (connection alive, every answer dropped): its
	 * endpoint answers within 2 s (the read is awaited 1 s, off the caller's thread) and says why
	 * the leader is unknown; a second read joins the one still out. The leader names itself
	 * without I/O.
	 */
	@Test
	void aFollowerWhoseServerStopsAnsweringAnswersWithinTwoSecondsAndSaysWhy() throws Exception {
		try (BlackholeProxy proxy = new BlackholeProxy(server.ports().get(0))) {
			instance("zk-one").run((first) -> instance("zk-hung", proxy.connectString()).run((second) -> {
				joinAndStart(first).awaitLeadership(Duration.ofSeconds(10)).orElseThrow();
				joinAndStart(second);
				LeadersEndpoint secondView = second.getBean(LeadersEndpoint.class);
				assertThat(secondView.group(this.group).leaderInstanceStatus()).isEqualTo(LeaderInstanceStatus.READ);

				proxy.dropAnswers(true);
				for (int read = 0; read < 2; read++) {
					long start = System.nanoTime();
					GroupDescriptor seen = secondView.leaders().groups().get(0);
					Duration took = Duration.ofNanos(System.nanoTime() - start);
					System.out.println("leaders endpoint on a server that stopped answering: " + took.toMillis() + " ms");
					assertThat(took).isLessThan(Duration.ofSeconds(2));
					assertThat(seen.leaderInstance()).isNull();
					assertThat(seen.leaderInstanceStatus()).isEqualTo(LeaderInstanceStatus.UNAVAILABLE);
				}
				assertThat(first.getBean(LeadersEndpoint.class).group(this.group))
					.satisfies((group) -> assertThat(group.leaderInstance()).isEqualTo("zk-one"))
					.satisfies((group) -> assertThat(group.leaderInstanceStatus())
						.isEqualTo(LeaderInstanceStatus.THIS_INSTANCE));
				proxy.dropAnswers(false);
			}));
		}
	}

	private Leadership joinAndStart(ConfigurableApplicationContext context) {
		Leadership leadership = context.getBean(LeaderElections.class).join(this.group);
		context.publishEvent(new ApplicationReadyEvent(new SpringApplication(), new String[0], context, Duration.ZERO));
		return leadership;
	}

}
