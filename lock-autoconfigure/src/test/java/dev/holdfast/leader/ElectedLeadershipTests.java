package dev.holdfast.leader;

import java.time.Duration;
import java.util.UUID;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import dev.holdfast.core.DefaultLockTemplate;
import dev.holdfast.core.LockSettings;
import dev.holdfast.memory.InMemoryLockBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNoException;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * One group's edges on a memory backend: an endless wait for leadership, and a release announced
 * after the elections closed (a backend's listener snapshot racing the unsubscription).
 */
class ElectedLeadershipTests {

	private final DefaultLockTemplate template = new DefaultLockTemplate(new InMemoryLockBackend(),
			LockSettings.defaults());

	private final DefaultLeaderElections elections = new DefaultLeaderElections(this.template, Duration.ofSeconds(10),
			(event) -> {
			});

	private final ElectedLeadership leadership = (ElectedLeadership) this.elections.join("group-" + UUID.randomUUID());

	@AfterEach
	void close() {
		this.elections.close();
		this.template.close();
	}

	@Test
	void awaitLeadershipWithATimeoutOfCenturiesReturnsTheGrant() {
		this.elections.start();
		assertTimeoutPreemptively(Duration.ofSeconds(10), () -> assertThat(
				this.leadership.awaitLeadership(Duration.ofSeconds(Long.MAX_VALUE))).isPresent());
	}

	@Test
	void aReleaseAnnouncedAfterTheElectionsClosedIsIgnored() throws Exception {
		this.elections.start();
		this.leadership.awaitLeadership(Duration.ofSeconds(10)).orElseThrow();
		this.elections.close();
		assertThatNoException().isThrownBy(this.leadership::wake);
	}

}
