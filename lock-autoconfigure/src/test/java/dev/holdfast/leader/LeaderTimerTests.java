package dev.holdfast.leader;

import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

import dev.holdfast.Leadership;
import dev.holdfast.LeadershipEvent;
import dev.holdfast.LeadershipRevokedEvent;
import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;
import dev.holdfast.spi.HeldLock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The leader groups are timed by the template's timer, which the renewals share (REN-1, LDR-3): a
 * renewal call that hangs (a backend that renews only by blocking, its server silent) runs on the
 * worker, so the term is still revoked by its validity end, not when the call returns.
 */
class LeaderTimerTests {

	@Test
	void aRenewalCallThatHangsDelaysNoRevocation() throws Exception {
		CountDownLatch answer = new CountDownLatch(1);
		HangingRenewals backend = new HangingRenewals(answer);
		List<LeadershipEvent> events = new CopyOnWriteArrayList<>();
		try (DefaultLockTemplate template = new DefaultLockTemplate(backend,
				LockSettings.defaults().withPollInterval(Duration.ofMillis(50)));
				DefaultLeaderElections elections = new DefaultLeaderElections(template, Duration.ofSeconds(1),
						(event) -> {
						})) {
			elections.start();
			Leadership group = elections.join("relay");
			group.addListener(events::add);
			await().atMost(Duration.ofSeconds(10)).until(group::isLeader);
			backend.hanging = true;
			long hangingSince = System.nanoTime();
			try {
				await().atMost(Duration.ofSeconds(5)).until(() -> backend.hung > 0);
				await().atMost(Duration.ofSeconds(5)).until(() -> events.size() >= 2);
				long revokedAfter = System.nanoTime() - hangingSince;
				assertThat(events.get(1)).isInstanceOfSatisfying(LeadershipRevokedEvent.class,
						(revoked) -> assertThat(revoked.getReason()).isEqualTo(LeadershipRevokedEvent.Reason.BACKEND_UNREACHABLE));
				assertThat(Duration.ofNanos(revokedAfter)).as("revoked by the term's validity end (1 s lease)")
					.isLessThan(Duration.ofMillis(1500));
				assertThat(backend.hung).as("the renewal call still hangs").isEqualTo(1);
			}
			finally {
				answer.countDown();
			}
		}
	}

	/** The memory backend, whose renewals block until {@code answer} once {@link #hanging}. */
	static final class HangingRenewals extends InMemoryLockBackend {

		private final String name = "hanging-" + UUID.randomUUID();

		private final CountDownLatch answer;

		volatile boolean hanging;

		volatile int hung;

		HangingRenewals(CountDownLatch answer) {
			this.answer = answer;
		}

		@Override
		public String name() {
			return this.name;
		}

		@Override
		public Set<String> renew(Collection<HeldLock> held) {
			if (this.hanging) {
				this.hung++;
				try {
					this.answer.await(30, TimeUnit.SECONDS);
				}
				catch (InterruptedException ex) {
					Thread.currentThread().interrupt();
				}
				return Set.of();
			}
			return super.renew(held);
		}

	}

}
