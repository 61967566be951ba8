package dev.holdfast.test;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.Test;

import dev.holdfast.spi.TickClaims;
import dev.holdfast.spi.TickClaims.TickClaim;
import dev.holdfast.spi.TickClaims.TickClaim.Outcome;

import static dev.holdfast.spi.TickClaims.TickClaim.Outcome.CLAIMED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The contract of {@link TickClaims}, for every backend that implements it: a tick is claimed
 * only while it is due by the backend's clock, at most once while its record lives, and the
 * record never moves back. A test class implements this interface and says how to get another
 * client of the same store. The backend's clock must be this JVM's to within a second (a backend
 * on this host).
 */
public interface TickClaimsContractTests {

	Duration TTL = Duration.ofSeconds(30);

	Instant TICK = Instant.parse("2030-01-01T00:00:00Z");

	/** A tolerance under which any tick is due: for the tests of the record, not of the clock. */
	Duration ANY_TIME = Duration.ofDays(36500);

	/** Another client of the backend under test, as another instance of the application would be. */
	TickClaims newClaimsClient();

	/**
	 * Whether the backend reads its tick records back for operators
	 * ({@link TickClaims#lastClaimedTick}); a backend that keeps the default answers {@code null}.
	 */
	default boolean readsTickRecords() {
		return true;
	}

	private static String jobKey() {
		return "holdfast:job-" + UUID.randomUUID();
	}

	@Test
	default void theLastClaimedTickIsReadFromItsRecord() {
		TickClaims client = newClaimsClient();
		String key = jobKey();
		assertThat(client.lastClaimedTick(key)).as("no record").isNull();
		assertThat(client.claimTick(key, TICK, ANY_TIME, TTL).outcome()).isEqualTo(CLAIMED);
		assertThat(newClaimsClient().lastClaimedTick(key)).isEqualTo(readsTickRecords() ? TICK : null);
	}

	@Test
	default void aTickIsClaimedOnlyWhileItIsDueByTheBackendsClock() {
		TickClaims client = newClaimsClient();
		String key = jobKey();
		Instant now = Instant.now().truncatedTo(ChronoUnit.MILLIS);
		Duration tolerance = Duration.ofSeconds(2);
		TickClaim early = client.claimTick(key, now.plusSeconds(10), tolerance, TTL);
		assertThat(early.outcome()).as("a tick 10 s ahead of the backend's clock").isEqualTo(Outcome.NOT_DUE);
		assertThat(Duration.between(now, early.backendTime()).abs()).as("the backend's time of %s", early)
			.isLessThan(Duration.ofSeconds(1));
		assertThat(client.claimTick(key, now.minusSeconds(10), tolerance, TTL).outcome())
			.as("a tick 10 s behind the backend's clock")
			.isEqualTo(Outcome.NOT_DUE);
		TickClaim due = client.claimTick(key, now, tolerance, TTL);
		assertThat(due.outcome()).as("the tick due now, after claims that were not due changed nothing")
			.isEqualTo(Outcome.CLAIMED);
		assertThat(Duration.between(now, due.backendTime()).abs()).isLessThan(Duration.ofSeconds(1));
		assertThat(newClaimsClient().claimTick(key, now, tolerance, TTL).outcome()).as("the same tick again")
			.isEqualTo(Outcome.TAKEN);
		assertThat(client.claimTick(key, now.plusSeconds(3600), tolerance, TTL).outcome())
			.as("a later tick, but not due: refused whatever the record holds")
			.isEqualTo(Outcome.NOT_DUE);
	}

	@Test
	default void aTickIsClaimedOnceAndTheRecordOnlyMovesForward() {
		TickClaims first = newClaimsClient();
		TickClaims second = newClaimsClient();
		String key = jobKey();
		assertThat(first.claimTick(key, TICK, ANY_TIME, TTL).outcome() == CLAIMED).isTrue();
		assertThat(second.claimTick(key, TICK, ANY_TIME, TTL).outcome() == CLAIMED).as("the same tick again").isFalse();
		assertThat(first.claimTick(key, TICK, ANY_TIME, TTL).outcome() == CLAIMED).as("the same tick by its claimer").isFalse();
		assertThat(second.claimTick(key, TICK.minusSeconds(1), ANY_TIME, TTL).outcome() == CLAIMED).as("an earlier tick").isFalse();
		assertThat(second.claimTick(key, TICK.plusSeconds(1), ANY_TIME, TTL).outcome() == CLAIMED).as("the next tick").isTrue();
		assertThat(first.claimTick(key, TICK, ANY_TIME, TTL).outcome() == CLAIMED).as("the tick before the last claimed").isFalse();
		assertThat(first.claimTick(key, TICK.plusSeconds(1), ANY_TIME, TTL).outcome() == CLAIMED).as("the last claimed tick").isFalse();
		assertThat(first.claimTick(key, TICK.plusSeconds(3600), ANY_TIME, TTL).outcome() == CLAIMED).as("a tick an hour later").isTrue();
		assertThat(second.claimTick(key, TICK.plusSeconds(2), ANY_TIME, TTL).outcome() == CLAIMED).as("a skipped tick").isFalse();
		assertThat(second.claimTick(jobKey(), TICK, ANY_TIME, TTL).outcome() == CLAIMED).as("the same tick of another job").isTrue();
	}

	@Test
	default void clientsRacingForOneTickHaveExactlyOneWinner() throws Exception {
		List<TickClaims> clients = List.of(newClaimsClient(), newClaimsClient(), newClaimsClient(),
				newClaimsClient());
		ExecutorService pool = Executors.newFixedThreadPool(2 * clients.size());
		try {
			String key = jobKey();
			for (int round = 0; round < 30; round++) {
				// every fifth round on a new job: the racers meet where no record exists yet
				key = (round % 5 == 0) ? jobKey() : key;
				String job = key;
				Instant tick = TICK.plusSeconds(round);
				List<Callable<Boolean>> claims = new ArrayList<>();
				for (int i = 0; i < 2 * clients.size(); i++) {
					TickClaims client = clients.get(i % clients.size());
					claims.add(() -> client.claimTick(job, tick, ANY_TIME, TTL).outcome() == CLAIMED);
				}
				int winners = 0;
				for (Future<Boolean> claim : pool.invokeAll(claims)) {
					winners += claim.get() ? 1 : 0;
				}
				assertThat(winners).as("winners of tick %s in round %d", tick, round).isOne();
			}
		}
		finally {
			pool.shutdownNow();
		}
	}

	@Test
	default void racingClaimsOfDifferentTicksLeaveTheRecordAtTheLatest() throws Exception {
		List<TickClaims> clients = List.of(newClaimsClient(), newClaimsClient(), newClaimsClient(),
				newClaimsClient());
		ExecutorService pool = Executors.newFixedThreadPool(2 * clients.size());
		try {
			String key = jobKey();
			for (int round = 0; round < 20; round++) {
				Instant base = TICK.plusSeconds(100L * round);
				assertThat(clients.get(0).claimTick(key, base, ANY_TIME, TTL).outcome() == CLAIMED).isTrue();
				// two racers per tick, over four ticks, in an order that differs per round
				List<Instant> ticks = new ArrayList<>();
				List<Callable<Boolean>> claims = new ArrayList<>();
				for (int i = 0; i < 2 * clients.size(); i++) {
					TickClaims client = clients.get(i % clients.size());
					Instant tick = base.plusSeconds(1 + (i + round) % 4);
					ticks.add(tick);
					claims.add(() -> client.claimTick(key, tick, ANY_TIME, TTL).outcome() == CLAIMED);
				}
				List<Instant> won = new ArrayList<>();
				List<Future<Boolean>> results = pool.invokeAll(claims);
				for (int i = 0; i < results.size(); i++) {
					if (results.get(i).get()) {
						won.add(ticks.get(i));
					}
				}
				Instant latest = base.plusSeconds(4);
				assertThat(won).as("ticks won in round %d", round).doesNotHaveDuplicates().contains(latest);
				// the record holds the latest tick: nothing up to it can be claimed, the next one can
				for (int later = 1; later <= 4; later++) {
					assertThat(clients.get(1).claimTick(key, base.plusSeconds(later), ANY_TIME, TTL).outcome() == CLAIMED).isFalse();
				}
			}
		}
		finally {
			pool.shutdownNow();
		}
	}

	@Test
	default void anExpiredRecordIsClaimedAfreshAndFailedClaimsDoNotExtendIt() {
		TickClaims first = newClaimsClient();
		TickClaims second = newClaimsClient();
		String key = jobKey();
		assertThat(first.claimTick(key, TICK, ANY_TIME, Duration.ofMillis(300)).outcome() == CLAIMED).isTrue();
		assertThat(second.claimTick(key, TICK, ANY_TIME, TTL).outcome() == CLAIMED).isFalse();
		// once the record expired, an earlier tick is claimed as if no record existed
		await().atMost(Duration.ofSeconds(10))
			.pollInterval(Duration.ofMillis(50))
			.until(() -> second.claimTick(key, TICK.minusSeconds(60), ANY_TIME, TTL).outcome() == CLAIMED);
		assertThat(first.claimTick(key, TICK.minusSeconds(60), ANY_TIME, TTL).outcome() == CLAIMED).isFalse();
	}

}
