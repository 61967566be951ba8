package dev.holdfast.spi;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The contract of {@link TickClaims}, for every backend that implements it: a tick is claimed at
 * most once while its record lives, and the record never moves back. A test class implements
 * this interface and says how to get another client of the same store.
 */
public interface TickClaimsContractTests {

	Duration TTL = Duration.ofSeconds(30);

	Instant TICK = Instant.parse("2030-01-01T00:00:00Z");

	/** Another client of the backend under test, as another instance of the application would be. */
	TickClaims newClaimsClient();

	private static String jobKey() {
		return "holdfast:job-" + UUID.randomUUID();
	}

	@Test
	default void aTickIsClaimedOnceAndTheRecordOnlyMovesForward() {
		TickClaims first = newClaimsClient();
		TickClaims second = newClaimsClient();
		String key = jobKey();
		assertThat(first.claimTick(key, TICK, TTL)).isTrue();
		assertThat(second.claimTick(key, TICK, TTL)).as("the same tick again").isFalse();
		assertThat(first.claimTick(key, TICK, TTL)).as("the same tick by its claimer").isFalse();
		assertThat(second.claimTick(key, TICK.minusSeconds(1), TTL)).as("an earlier tick").isFalse();
		assertThat(second.claimTick(key, TICK.plusSeconds(1), TTL)).as("the next tick").isTrue();
		assertThat(first.claimTick(key, TICK, TTL)).as("the tick before the last claimed").isFalse();
		assertThat(first.claimTick(key, TICK.plusSeconds(1), TTL)).as("the last claimed tick").isFalse();
		assertThat(first.claimTick(key, TICK.plusSeconds(3600), TTL)).as("a tick an hour later").isTrue();
		assertThat(second.claimTick(key, TICK.plusSeconds(2), TTL)).as("a skipped tick").isFalse();
		assertThat(second.claimTick(jobKey(), TICK, TTL)).as("the same tick of another job").isTrue();
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
					claims.add(() -> client.claimTick(job, tick, TTL));
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
				assertThat(clients.get(0).claimTick(key, base, TTL)).isTrue();
				// two racers per tick, over four ticks, in an order that differs per round
				List<Instant> ticks = new ArrayList<>();
				List<Callable<Boolean>> claims = new ArrayList<>();
				for (int i = 0; i < 2 * clients.size(); i++) {
					TickClaims client = clients.get(i % clients.size());
					Instant tick = base.plusSeconds(1 + (i + round) % 4);
					ticks.add(tick);
					claims.add(() -> client.claimTick(key, tick, TTL));
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
					assertThat(clients.get(1).claimTick(key, base.plusSeconds(later), TTL)).isFalse();
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
		assertThat(first.claimTick(key, TICK, Duration.ofMillis(300))).isTrue();
		assertThat(second.claimTick(key, TICK, TTL)).isFalse();
		// once the record expired, an earlier tick is claimed as if no record existed
		await().atMost(Duration.ofSeconds(10))
			.pollInterval(Duration.ofMillis(50))
			.until(() -> second.claimTick(key, TICK.minusSeconds(60), TTL));
		assertThat(first.claimTick(key, TICK.minusSeconds(60), TTL)).isFalse();
	}

}
