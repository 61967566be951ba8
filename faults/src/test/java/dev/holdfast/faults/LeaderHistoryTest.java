package dev.holdfast.faults;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/** The leader history on hand-written logs: it must see each double leader, and none where there is none. */
@Tag("smoke")
class LeaderHistoryTest {

	private static final long MS = 1_000_000;

	@TempDir
	Path dir;

	@Test
	void aPausedLeaderLeadsUntilItsValidityEndNotUntilItsLateRevocation() throws IOException {
		// Instance 1 renews to 2000 ms, is stopped, learns of its revocation at 5000 ms; instance 2
		// is granted at 2040 ms.
		LeaderHistory history = history(List.of(),
				List.of(line(0, 1, "GRANT 10"), line(1, 1, "VALID 10 " + 2000 * MS),
						line(5000, 1, "REVOKE 10 BACKEND_UNREACHABLE")),
				List.of(line(2040, 2, "GRANT 11"), line(2041, 2, "VALID 11 " + 4041 * MS)));
		assertThat(history.overlaps()).isEmpty();
		assertThat(history.tokenRegressions()).isZero();
		assertThat(history.term(1, 10).orElseThrow().end()).isEqualTo(2000 * MS);
		assertThat(history.firstAfter(1000 * MS).orElseThrow().pid()).isEqualTo(2);
	}

	@Test
	void aGrantBeforeTheOtherTermsValidityEndIsADoubleLeader() throws IOException {
		LeaderHistory history = history(List.of(),
				List.of(line(0, 1, "GRANT 10"), line(1, 1, "VALID 10 " + 2000 * MS), line(5000, 1, "REVOKE 10 LOST")),
				List.of(line(1900, 2, "GRANT 11")));
		assertThat(history.overlaps()).hasSize(1).first().asString().contains("by 100 ms");
	}

	@Test
	void aKilledLeaderLeadsUntilItsKillAndATermNeverEndedOverlapsEveryLaterOne() throws IOException {
		LeaderHistory killed = history(List.of(line(500, 0, "KILL 1")),
				List.of(line(0, 1, "GRANT 10"), line(1, 1, "VALID 10 " + 2000 * MS)),
				List.of(line(600, 2, "GRANT 11")));
		assertThat(killed.overlaps()).isEmpty();
		LeaderHistory unended = history(List.of(), List.of(line(0, 1, "GRANT 10")), List.of(line(9000, 2, "GRANT 11")));
		assertThat(unended.overlaps()).hasSize(1);
	}

	@Test
	void aLaterTermWithASmallerTokenIsARegression() throws IOException {
		LeaderHistory history = history(List.of(),
				List.of(line(0, 1, "GRANT 10"), line(100, 1, "REVOKE 10 YIELDED")), List.of(line(200, 2, "GRANT 9")));
		assertThat(history.tokenRegressions()).isEqualTo(1);
	}

	private LeaderHistory history(List<String> controller, List<String> first, List<String> second) throws IOException {
		Path controllerLog = Files.write(this.dir.resolve("controller.log"), controller);
		Path firstLog = Files.write(this.dir.resolve("client0.log"), first);
		Path secondLog = Files.write(this.dir.resolve("client1.log"), second);
		return LeaderHistory.read(controllerLog, List.of(firstLog, secondLog));
	}

	private static String line(long ms, long pid, String event) {
		return (ms * MS) + " " + pid + " " + event;
	}

}
