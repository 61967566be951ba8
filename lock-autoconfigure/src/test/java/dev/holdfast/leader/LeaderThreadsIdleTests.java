package dev.holdfast.leader;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;

import dev.holdfast.Leadership;
import dev.holdfast.LeadershipEvent;
import dev.holdfast.LeadershipGrantedEvent;
import dev.holdfast.LeadershipRevokedEvent;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The leader elections' threads exist only while they have work (LDR-9): none before a group is
 * joined, the delivery thread ends about 1 s after the last event and a new one delivers the next
 * events in their order (LDR-4), the template's timer, which times the groups, ends once no group
 * is joined (and the next renewal tick of the released term, due a third of its lease time after
 * its last renewal, has passed: a lease time of 3 s here).
 */
class LeaderThreadsIdleTests {

	@Test
	void theDeliveryThreadEndsWhenIdleAndANewOneDeliversTheNextEventsInOrder() throws Exception {
		String backendName = "leader-idle-" + UUID.randomUUID();
		InMemoryLockBackend backend = new InMemoryLockBackend() {
			@Override
			public String name() {
				return backendName;
			}
		};
		List<String> delivered = new CopyOnWriteArrayList<>();
		List<Thread> deliveredOn = new CopyOnWriteArrayList<>();
		try (DefaultLockTemplate template = new DefaultLockTemplate(backend, LockSettings.defaults());
				DefaultLeaderElections elections = new DefaultLeaderElections(template, Duration.ofSeconds(3),
						(event) -> {
						})) {
			elections.start();
			assertThat(threads("holdfast-timer-" + backendName)).as("no group joined: no timer").isZero();
			Leadership group = elections.join("relay");
			group.addListener((event) -> {
				delivered.add(describe(event));
				deliveredOn.add(Thread.currentThread());
			});
			await().atMost(Duration.ofSeconds(10)).until(() -> delivered.size() == 1);
			await().atMost(Duration.ofSeconds(5)).alias("the delivery thread ends about 1 s after the grant")
				.until(() -> threads("holdfast-leader-events-" + backendName) == 0);
			assertThat(threads("holdfast-timer-" + backendName)).as("a group joined: its checks are timed").isEqualTo(1);
			long firstToken = group.term().orElseThrow().fencingToken();

			group.yield();
			await().atMost(Duration.ofSeconds(10)).until(() -> delivered.size() == 3);
			long secondToken = group.term().orElseThrow().fencingToken();
			assertThat(secondToken).isGreaterThan(firstToken);
			assertThat(delivered).containsExactly("granted " + firstToken, "revoked " + firstToken + " YIELDED",
					"granted " + secondToken);
			assertThat(deliveredOn.get(1)).as("delivered by a new thread").isNotSameAs(deliveredOn.get(0));

			group.close();
			await().atMost(Duration.ofSeconds(10)).until(() -> delivered.size() == 4);
			assertThat(delivered.get(3)).isEqualTo("revoked " + secondToken + " SHUTDOWN");
			await().atMost(Duration.ofSeconds(5)).alias("no group joined: the timer and the delivery thread end")
				.until(() -> threads("holdfast-timer-" + backendName) == 0
						&& threads("holdfast-leader-events-" + backendName) == 0);
		}
	}

	private static String describe(LeadershipEvent event) {
		return (event instanceof LeadershipGrantedEvent) ? "granted " + event.getTerm().fencingToken()
				: "revoked " + event.getTerm().fencingToken() + " " + ((LeadershipRevokedEvent) event).getReason();
	}

	private static long threads(String name) {
		return Thread.getAllStackTraces().keySet().stream()
			.filter((thread) -> thread.getName().equals(name) && thread.isAlive())
			.count();
	}

}
